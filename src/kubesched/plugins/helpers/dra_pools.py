"""Dynamic resource allocation's resource pools: which slices can serve a node, gathered into pools (the
structured allocator's GatherPools), and the errors the allocator raises. Node selection uses the one
node-selector evaluator, `core.nodeaffinity` (Go's ParseInt for Gt/Lt, as kube-scheduler)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubesched.api.core import Node, NodeSelector
from kubesched.api.resource_v1 import ResourceClaim, ResourceSlice
from kubesched.core.nodeaffinity import node_matches_selector
from kubesched.errors import ClusterError, InputError

DeviceID = tuple[str, str, str]  # driver, pool, device


class AllocationError(InputError):
    """Something is wrong with a claim or class: scheduling the pod fails with an error (upstream's statusError)."""


class FailedOnNode(ClusterError):
    """Not on this node, for a reason worth telling if no node fits (ErrFailedAllocationOnNode)."""


def claim_key(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def node_matches(node: Node, name: str | None, all_nodes: bool | None, selector: NodeSelector | None) -> bool:
    if name:
        return node.metadata.name == name
    if all_nodes:
        return True
    if selector is not None:
        return node_matches_selector(node, selector)
    return False


@dataclass
class Pool:
    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)
    incomplete: bool = False
    invalid: bool = False


def pool_index(slices: Sequence[ResourceSlice]) -> dict[tuple[str, str], list[ResourceSlice]]:
    """Every slice by (driver, pool): what a pool's completeness is checked against."""
    out: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        out.setdefault((s.spec.driver, s.spec.pool.name), []).append(s)
    return out


def gather_pools(
    slices: Sequence[ResourceSlice], node: Node, index: Mapping[tuple[str, str], list[ResourceSlice]] | None = None
) -> list[Pool]:
    """GatherPools: the pools with slices for the node, newest generation only, complete or not, valid or not.

    ``slices`` may be only those that can be the node's (by name, or by selector and for all nodes); ``index``
    (`pool_index` of every slice) is what completeness is checked against, ``slices`` when not given."""
    pools: dict[tuple[str, str], Pool] = {}
    for s in slices:
        spec = s.spec
        if spec.per_device_node_selection is not None:
            continue  # partitionable devices are off (DRAPartitionableDevices)
        if not (spec.node_name or spec.all_nodes or spec.node_selector is not None):
            continue
        if not node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector):
            continue
        key = (spec.driver, spec.pool.name)
        pool = pools.get(key)
        if pool is None:
            pools[key] = Pool(spec.driver, spec.pool.name, [s])
            continue
        generation = pool.slices[0].spec.pool.generation
        if spec.pool.generation < generation:
            continue
        if spec.pool.generation > generation:
            pool.slices = []
        pool.slices.append(s)
    out = []
    for (driver, name), pool in pools.items():
        first = pool.slices[0].spec.pool
        complete = len(pool.slices) == first.resource_slice_count
        if not complete:
            same = (
                index.get((driver, name), [])
                if index is not None
                else [x for x in slices if x.spec.driver == driver and x.spec.pool.name == name]
            )
            if any(x.spec.pool.generation > first.generation for x in same):
                continue  # obsolete
            complete = sum(x.spec.pool.generation == first.generation for x in same) == first.resource_slice_count
        pool.incomplete = not complete
        seen: set[str] = set()
        for s in pool.slices:
            for d in s.spec.devices or []:
                if d.name in seen:
                    pool.invalid = True
                seen.add(d.name)
        out.append(pool)
    return out


def allocated_devices(claims: Mapping[str, ResourceClaim]) -> set[DeviceID]:
    """Devices allocated by the claims (admin-access allocations do not take the device)."""
    out: set[DeviceID] = set()
    for claim in claims.values():
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for r in allocation.devices.results or []:
            if not r.admin_access:
                out.add((r.driver, r.pool, r.device))
    return out
