"""What resource scoring counts: kube-scheduler's resource_allocation.go accounting, shared by
NodeResourcesFit's scoring strategies and NodeResourcesBalancedAllocation."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from kubesched.core.nodeaffinity import is_qualified_name
from kubesched.core.podinfo import PodInfo


class ResourceSpec(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    name: str = ""
    weight: int = 0


def default_resources(resources: Sequence[ResourceSpec]) -> list[ResourceSpec]:
    """cpu and memory (weight 1) when none are given; a weight of 0 means 1 (v1 defaults.go)."""
    if not resources:
        return [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    return [ResourceSpec(r.name, r.weight or 1) for r in resources]


def is_extended_resource(name: str) -> bool:
    """A domain-prefixed resource outside kubernetes.io/ (IsExtendedResourceName)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


def is_scalar_resource(name: str) -> bool:
    """A resource kept beside cpu/memory/ephemeral-storage: extended, hugepages, kubernetes.io/-prefixed, volumes."""
    return (
        is_extended_resource(name) or name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name
    )


def scored_columns(pod: PodInfo, name: str, *, use_requested: bool) -> tuple[str, int] | None:
    """(usage column key, the pod's amount) for one scored resource; None if it is not scored.

    cpu and memory count the 100m / 200Mi defaults unless ``use_requested``; a scalar resource counts
    only when the pod requests it; any other name is not scored.
    """
    if name in ("cpu", "memory"):
        if use_requested:
            return name, pod.requests.get(name, 0)
        return "nonzero:" + name, pod.non_zero_cpu if name == "cpu" else pod.non_zero_memory
    if name == "ephemeral-storage" or (is_scalar_resource(name) and pod.requests.get(name, 0) != 0):
        return name, pod.requests.get(name, 0)
    return None


def scored_resources(pod: PodInfo, names: tuple[str, ...], *, use_requested: bool) -> tuple[tuple[str, str, int], ...]:
    """(resource, usage column key, the pod's amount) of each scored resource among ``names``, in order;
    computed once per pod spec (every cycle of every pod of a ReplicaSet reads the same)."""
    key = ("#scored", names, use_requested)
    cached = pod.cache.get(key)
    if cached is None:
        found = ((n, scored_columns(pod, n, use_requested=use_requested)) for n in names)
        cached = pod.cache[key] = tuple((n, c[0], c[1]) for n, c in found if c is not None)
    return cached  # type: ignore[return-value]
