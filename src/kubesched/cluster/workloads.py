"""The objects that select pods, for PodTopologySpread's default constraints (kube-scheduler's DefaultSelector).

kube-scheduler spreads a pod without constraints of its own by its profile's default constraints,
with a selector derived from what selects the pod (helper.DefaultSelector, v1.35.4):

* the selectors of the Services of its namespace that select it (a nil selector selects nothing),
  merged;
* then, by its controller owner reference: a ReplicationController's selector merged in too, or a
  ReplicaSet's or StatefulSet's label selector's requirements added (an owner that is not known, or
  a selector that does not parse, adds nothing).

An empty result means no default constraints. Fed by list+watch (scheduler/run.py).
"""

from __future__ import annotations

from kubesched.api.core import LabelSelector, LabelSelectorRequirement, ReplicationController, Service, Workload
from kubesched.core.podinfo import PodInfo
from kubesched.plugins.label_selector import SelectorError, compile_selector

Key = tuple[str, str]  # (namespace, name)


def key(meta_namespace: str, name: str) -> Key:
    return meta_namespace, name


class Workloads:
    """Services, ReplicationControllers, ReplicaSets and StatefulSets, by namespace and name."""

    def __init__(self) -> None:
        self.services: dict[str, dict[str, dict[str, str] | None]] = {}  # namespace -> name -> selector
        self.controllers: dict[Key, dict[str, str] | None] = {}
        self.replica_sets: dict[Key, LabelSelector | None] = {}
        self.stateful_sets: dict[Key, LabelSelector | None] = {}

    # ---- fed by the watches ------------------------------------------------------------------------

    def replace_services(self, items: list[Service]) -> None:
        self.services = {}
        for item in items:
            self.upsert_service(item)

    def upsert_service(self, item: Service) -> None:
        meta = item.metadata
        self.services.setdefault(meta.namespace, {})[meta.name] = item.spec.selector

    def delete_service(self, item: Service) -> None:
        meta = item.metadata
        self.services.get(meta.namespace, {}).pop(meta.name, None)

    def replace_controllers(self, items: list[ReplicationController]) -> None:
        self.controllers = {key(i.metadata.namespace, i.metadata.name): i.spec.selector for i in items}

    def upsert_controller(self, item: ReplicationController) -> None:
        self.controllers[key(item.metadata.namespace, item.metadata.name)] = item.spec.selector

    def delete_controller(self, item: ReplicationController) -> None:
        self.controllers.pop(key(item.metadata.namespace, item.metadata.name), None)

    def replace_replica_sets(self, items: list[Workload]) -> None:
        self.replica_sets = {key(i.metadata.namespace, i.metadata.name): i.spec.selector for i in items}

    def upsert_replica_set(self, item: Workload) -> None:
        self.replica_sets[key(item.metadata.namespace, item.metadata.name)] = item.spec.selector

    def delete_replica_set(self, item: Workload) -> None:
        self.replica_sets.pop(key(item.metadata.namespace, item.metadata.name), None)

    def replace_stateful_sets(self, items: list[Workload]) -> None:
        self.stateful_sets = {key(i.metadata.namespace, i.metadata.name): i.spec.selector for i in items}

    def upsert_stateful_set(self, item: Workload) -> None:
        self.stateful_sets[key(item.metadata.namespace, item.metadata.name)] = item.spec.selector

    def delete_stateful_set(self, item: Workload) -> None:
        self.stateful_sets.pop(key(item.metadata.namespace, item.metadata.name), None)

    # ---- DefaultSelector ----------------------------------------------------------------------------

    def default_selector(self, pod: PodInfo) -> LabelSelector | None:
        """The selector PodTopologySpread's default constraints use for ``pod``; None when it is empty."""
        labels = pod.labels
        merged: dict[str, str] = {}
        for selector in self.services.get(pod.namespace, {}).values():
            if selector is not None and all(labels.get(k) == v for k, v in selector.items()):
                merged.update(selector)
        requirements: list[LabelSelectorRequirement] = []
        owner = next((o for o in pod.pod.metadata.owner_references or () if o.controller), None)
        if owner is not None:
            where = key(pod.namespace, owner.name)
            if owner.api_version == "v1" and owner.kind == "ReplicationController":
                merged.update(self.controllers.get(where) or {})
            elif owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
                sets = self.replica_sets if owner.kind == "ReplicaSet" else self.stateful_sets
                requirements = as_requirements(sets.get(where))
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
