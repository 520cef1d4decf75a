"""The objects that select pods, for PodTopologySpread's default constraints (kube-scheduler's DefaultSelector).

kube-scheduler spreads a pod without constraints of its own by its profile's default constraints,
with a selector derived from what selects the pod (helper.DefaultSelector, v1.35.4):

* the selectors of the Services of its namespace that select it (a nil selector selects nothing),
  merged;
* then, by its controller owner reference: a ReplicationController's selector merged in too, or a
  ReplicaSet's or StatefulSet's label selector's requirements added (an owner that is not known, or
  a selector that does not parse, adds nothing).

An empty result means no default constraints. Fed by list+watch (`source.scheduler_source`) or a cluster file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from kubesched.api.core import LabelSelector, LabelSelectorRequirement, ReplicationController, Service, Workload
from kubesched.core.podinfo import PodInfo
from kubesched.plugins.helpers.label_selector import SelectorError, compile_selector

S = TypeVar("S")
Item = TypeVar("Item", Service, ReplicationController, Workload)


class Selectors(Generic[Item, S]):
    """One kind's selectors by namespace and name, fed by a watch (or a cluster file)."""

    def __init__(self, selector_of: Callable[[Item], S]) -> None:
        self._selector_of: Callable[[Item], S] = selector_of
        self.by_namespace: dict[str, dict[str, S]] = {}

    def replace(self, items: list[Item]) -> None:
        self.by_namespace = {}
        for item in items:
            self.upsert(item)

    def upsert(self, item: Item) -> None:
        meta = item.metadata
        self.by_namespace.setdefault(meta.namespace, {})[meta.name] = self._selector_of(item)

    def delete(self, item: Item) -> None:
        meta = item.metadata
        self.by_namespace.get(meta.namespace, {}).pop(meta.name, None)

    def get(self, namespace: str, name: str) -> S | None:
        return self.by_namespace.get(namespace, {}).get(name)


class Workloads:
    """Services, ReplicationControllers, ReplicaSets and StatefulSets: their selectors."""

    def __init__(self) -> None:
        self.services: Selectors[Service, dict[str, str] | None] = Selectors(lambda s: s.spec.selector)
        self.controllers: Selectors[ReplicationController, dict[str, str] | None] = Selectors(lambda c: c.spec.selector)
        self.replica_sets: Selectors[Workload, LabelSelector | None] = Selectors(lambda w: w.spec.selector)
        self.stateful_sets: Selectors[Workload, LabelSelector | None] = Selectors(lambda w: w.spec.selector)

    # ---- DefaultSelector ----------------------------------------------------------------------------

    def default_selector(self, pod: PodInfo) -> LabelSelector | None:
        """The selector PodTopologySpread's default constraints use for ``pod``; None when it is empty."""
        labels = pod.labels
        merged: dict[str, str] = {}
        for selector in self.services.by_namespace.get(pod.namespace, {}).values():
            if selector is not None and all(labels.get(k) == v for k, v in selector.items()):
                merged.update(selector)
        requirements: list[LabelSelectorRequirement] = []
        owner = next((o for o in pod.pod.metadata.owner_references or () if o.controller), None)
        if owner is not None:
            if owner.api_version == "v1" and owner.kind == "ReplicationController":
                merged.update(self.controllers.get(pod.namespace, owner.name) or {})
            elif owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
                sets = self.replica_sets if owner.kind == "ReplicaSet" else self.stateful_sets
                requirements = as_requirements(sets.get(pod.namespace, owner.name))
        if not merged and not requirements:
            return None
        return LabelSelector(match_labels=merged or None, match_expressions=requirements or None)


def as_requirements(selector: LabelSelector | None) -> list[LabelSelectorRequirement]:
    """A label selector as requirements (matchLabels as `In [value]`), as LabelSelectorAsSelector lists them;
    none when it does not parse (upstream then adds nothing)."""
    if selector is None:
        return []
    try:
        compile_selector(selector)
    except SelectorError:
        return []
    out = [LabelSelectorRequirement(k, "In", [v]) for k, v in sorted((selector.match_labels or {}).items())]
    return out + list(selector.match_expressions or ())
