"""Admission rules: each gets the pod (plain JSON) and the request, and answers with a Verdict (or None: allow).

Validating rules (`requireLabel`, `feasibility`, user rules `on: validate`) run on /validate; mutating
rules (`setScheduler`, user rules `on: mutate`) run on /mutate and change the pod in place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from kubesched.webhook.review import AdmissionRequest

DEFAULT_SCHEDULER = "default-scheduler"
Phase = Literal["validate", "mutate"]
Action = Literal["deny", "warn"]
PodJSON = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """A rule's answer: allowed or not (with a message), and warnings shown to the client."""

    allowed: bool = True
    message: str = ""
    warnings: tuple[str, ...] = ()

    @staticmethod
    def allow() -> Verdict:
        return Verdict()

    @staticmethod
    def deny(message: str) -> Verdict:
        return Verdict(False, message)

    @staticmethod
    def warn(*messages: str) -> Verdict:
        return Verdict(True, "", messages)

    @staticmethod
    def act(action: Action, message: str) -> Verdict:
        """Deny with ``message``, or admit with it as a warning."""
        return Verdict.deny(message) if action == "deny" else Verdict.warn(message)


RuleResult = Verdict | None | Awaitable[Verdict | None]


class Rule(Protocol):
    """A configured rule: a name (metrics, messages), the path it runs on, and the check itself."""

    @property
    def name(self) -> str: ...

    @property
    def phase(self) -> Phase: ...

    def __call__(self, pod: PodJSON, request: AdmissionRequest) -> RuleResult: ...


def scheduler_of(pod: Mapping[str, Any]) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER


def pod_fields(request: AdmissionRequest, pod: Mapping[str, Any]) -> dict[str, str]:
    """A log line's fields for a reviewed pod: pod (namespace/name) and profile (its schedulerName)."""
    meta = pod.get("metadata") or {}
    name = meta.get("name") or f"{meta.get('generateName', '')}*"
    return {"pod": f"{request.namespace}/{name}", "profile": scheduler_of(pod)}


def labels_of(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict((pod.get("metadata") or {}).get("labels") or {})


@dataclass(frozen=True)
class RequireLabel:
    """Pods of ``scheduler_name`` must carry ``label`` (with ``value`` when set)."""

    name: str
    scheduler_name: str
    label: str
    value: str | None = None
    action: Action = "deny"
    phase: Phase = "validate"

    def __call__(self, pod: PodJSON, request: AdmissionRequest) -> Verdict | None:
        if scheduler_of(pod) != self.scheduler_name:
            return None
        labels = labels_of(pod)
        wanted = f'the label "{self.label}"' + (f' with value "{self.value}"' if self.value is not None else "")
        if self.label not in labels:
            found = ""
        elif self.value is not None and labels[self.label] != self.value:
            found = f', not "{labels[self.label]}"'
        else:
            return None
        return Verdict.act(self.action, f'pods of scheduler "{self.scheduler_name}" must carry {wanted}{found}')


def _toleration_key(t: Mapping[str, Any]) -> tuple[Any, ...]:
    # An empty operator means Equal: compare tolerations as the API server treats them.
    return (
        t.get("key", ""),
        t.get("operator") or "Equal",
        t.get("value", ""),
        t.get("effect", ""),
        t.get("tolerationSeconds"),
    )


@dataclass(frozen=True)
class SetScheduler:
    """On CREATE, route selected pods to ``scheduler_name``, adding tolerations, node selector and labels."""

    name: str
    scheduler_name: str
    namespaces: frozenset[str] = frozenset()
    match_labels: Mapping[str, str] = field(default_factory=dict)
    force: bool = False
    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    phase: Phase = "mutate"

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if self.namespaces and namespace not in self.namespaces:
            return False
        return all(labels.get(k) == v for k, v in self.match_labels.items())

    def __call__(self, pod: PodJSON, request: AdmissionRequest) -> None:
        # schedulerName and nodeSelector are immutable after creation: an UPDATE patch would be refused.
        if request.operation != "CREATE":
            return
        namespace = request.namespace or (pod.get("metadata") or {}).get("namespace", "")
        if not self.selects(namespace, labels_of(pod)):
            return
        meta, spec = pod.setdefault("metadata", {}), pod.setdefault("spec", {})
        current = scheduler_of(pod)
        if current != self.scheduler_name:
            if current != DEFAULT_SCHEDULER and not self.force:
                return  # the pod chose another scheduler explicitly
            spec["schedulerName"] = self.scheduler_name
        have = spec.get("tolerations") or []
        keys = {_toleration_key(t) for t in have}
        missing = [dict(t) for t in self.tolerations if _toleration_key(t) not in keys]
        if missing:
            spec["tolerations"] = [*have, *missing]
        self._merge(spec, "nodeSelector", self.node_selector)
        self._merge(meta, "labels", self.labels)

    def _merge(self, into: dict[str, Any], key: str, wanted: Mapping[str, str]) -> None:
        have = dict(into.get(key) or {})
        merged = {**have, **{k: v for k, v in wanted.items() if self.force or k not in have}}
        if merged != have:
            into[key] = merged


UserFunction = Callable[[PodJSON, AdmissionRequest], Any]


@dataclass(frozen=True)
class PythonRule:
    """A user's function ``(pod, request) -> Verdict | None`` (may be async), loaded from ``target``."""

    name: str
    target: str
    func: UserFunction
    phase: Phase = "validate"

    def __call__(self, pod: PodJSON, request: AdmissionRequest) -> RuleResult:
        result: RuleResult = self.func(pod, request)  # the service checks what came back
        return result
