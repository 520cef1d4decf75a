"""What kube-apiserver adds to a pod before a scheduler sees it, for pods read from a file.

A pod in a cluster file never went through the API server, so the defaults and admission plugins that
scheduling depends on are applied here, on the decoded JSON, as the server applies them:

* defaulting (pkg/apis/core/v1/defaults.go): a container's requests default to its limits, per resource;
  ``schedulerName`` defaults to ``default-scheduler``;
* the Priority admission plugin: ``priority`` and ``preemptionPolicy`` from the pod's PriorityClass, or the
  global default class, or 0; an unknown class is refused as the server refuses it, unless the pod's
  ``priority`` is set already (it is kept, with a warning: the file may simply lack the class);
* the DefaultTolerationSeconds admission plugin: tolerations of the not-ready and unreachable NoExecute
  taints for 300 s, unless the pod tolerates them already.

A pod the API server stored already (it has ``metadata.resourceVersion``: ``kubectl get pods -o yaml``, a
snapshot) went through all of this: it is taken as stored, never admitted again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.errors import InputError

DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


# Classes every cluster has (pkg/apis/scheduling: SystemPriorityClasses).
SYSTEM_CLASSES = (
    PriorityClass("system-node-critical", 2000001000),
    PriorityClass("system-cluster-critical", 2000000000),
)


class DefaultingError(InputError):
    """A pod the API server would refuse; the message says why as the server does."""


def priority_classes(items: list[PriorityClass]) -> dict[str, PriorityClass]:
    """The file's classes beside the system ones; two global defaults are refused as the server does."""
    classes = {c.name: c for c in SYSTEM_CLASSES}
    defaults = [c.name for c in items if c.global_default]
    if len(defaults) > 1:
        raise DefaultingError(f"PriorityClasses {', '.join(defaults)}: only one may have globalDefault: true")
    classes.update((c.name, c) for c in items)
    return classes


def default_pod(
    pod: dict[str, Any], classes: Mapping[str, PriorityClass], warnings: list[str] | None = None
) -> dict[str, Any]:
    """The pod as the API server would store it (a copy where something changes); what is taken on trust
    is appended to ``warnings``."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or stored(pod):
        return pod
    spec = dict(spec)
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [_default_container(c) for c in spec[key]]
    _admit_priority(spec, classes, warnings if warnings is not None else [])
    spec["tolerations"] = _default_tolerations(spec.get("tolerations"))
    return {**pod, "spec": spec}


def _default_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return container
    requests = resources.get("requests")
    requests = dict(requests) if isinstance(requests, dict) else {}
    for name, amount in resources["limits"].items():
        requests.setdefault(name, amount)
    return {**container, "resources": {**resources, "requests": requests}}


def stored(obj: dict[str, Any]) -> bool:
    """Whether the API server stored ``obj`` (only it sets metadata.resourceVersion)."""
    meta = obj.get("metadata")
    return isinstance(meta, dict) and bool(meta.get("resourceVersion"))


def _admit_priority(spec: dict[str, Any], classes: Mapping[str, PriorityClass], warnings: list[str]) -> None:
    name = spec.get("priorityClassName") or ""
    explicit = spec.get("priority")
    if name:
        cls = classes.get(name)
        if cls is None and isinstance(explicit, int) and not isinstance(explicit, bool):
            warnings.append(f"no PriorityClass {name} in the file: spec.priority {explicit} is kept")
            return
        if cls is None:
            raise DefaultingError(f"no PriorityClass with name {name} was found")
    else:
        cls = next((c for c in classes.values() if c.global_default), None)
    value = cls.value if cls is not None else 0
    if explicit is not None and (name or cls is not None) and explicit != value:
        raise DefaultingError(
            "the integer value of priority "
            f"({explicit}) must not be provided in pod spec; priority admission controller "
            f"computed {value} from the given PriorityClass name"
        )
    if explicit is None:
        spec["priority"] = value
    if cls is not None:
        spec.setdefault("preemptionPolicy", cls.preemption_policy)


def _default_tolerations(tolerations: Any) -> list[Any]:
    items = list(tolerations) if isinstance(tolerations, list) else []

    def tolerated(key: str) -> bool:
        # As the admission plugin: the key (or none) and the effect (or none); the operator is not read.
        return any(
            isinstance(t, dict) and t.get("key", "") in ("", key) and t.get("effect", "") in ("", "NoExecute")
            for t in items
        )

    for key in (NOT_READY, UNREACHABLE):
        if not tolerated(key):
            items.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    return items
