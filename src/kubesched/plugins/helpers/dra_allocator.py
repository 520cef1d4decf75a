"""The structured-parameters allocator of dynamic resource allocation (k8s.io/dynamic-resource-allocation's
stable allocator, with the features kube-scheduler enables by default: prioritized lists and admin access).

For one node and the pod's unallocated claims it searches, exhaustively and in slice order, devices of the
node's resource pools for every request: a device must pass its class's selectors and the request's, be
free (not allocated to another claim, nor to an earlier request here, unless admin access), and keep the
claim's matchAttribute constraints. The first full solution wins. Partitionable devices (counters),
consumable capacity and binding conditions are off by default upstream: such devices and slices are left out
as there. Device taints are on by default in v1.37; requests' tolerations are not read, so a tainted device is
never allocated (a pod waits rather than lands on it). Pools are gathered in `dra_pools.py`, the search is
`dra_search.py`; this module prepares the requests and writes the results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesched.api.core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.resource_v1 import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceSelector,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.plugins.helpers.dra_cel import CELError, SelectorCache, device_value
from kubesched.plugins.helpers.dra_pools import (
    AllocationError,
    DeviceID,
    FailedOnNode,
    Pool,
    claim_key,
    gather_pools,
    pool_index,
)
from kubesched.plugins.helpers.dra_search import Pick, Request, Search


class Allocator:
    """One pod's allocator: classes, slices and allocated devices as of PreFilter; `allocate` per node."""

    def __init__(
        self,
        classes: Callable[[str], DeviceClass | None],
        slices: Sequence[ResourceSlice],
        allocated: set[DeviceID],
        cache: SelectorCache,
    ) -> None:
        self.classes = classes
        self.slices = slices
        self.allocated = allocated
        self.cache = cache
        self._matches: dict[tuple[int, str, DeviceID], bool] = {}  # selection does not depend on the node
        self._values: dict[DeviceID, dict[str, Any]] = {}
        # A node's slices without a scan of all: by node name, and those selecting nodes otherwise (kept in
        # the slices' order, which the search follows).
        self._index = pool_index(slices)
        self._by_node: dict[str, list[int]] = {}
        self._general: list[int] = []
        for i, s in enumerate(slices):
            if s.spec.node_name:
                self._by_node.setdefault(s.spec.node_name, []).append(i)
            elif s.spec.all_nodes or s.spec.node_selector is not None:
                self._general.append(i)

    def node_slices(self, node: Node) -> list[ResourceSlice]:
        positions = sorted([*self._by_node.get(node.metadata.name, ()), *self._general])
        return [self.slices[i] for i in positions]

    def allocate(self, node: Node, claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
        """The claims' allocations on ``node``, or None when they do not fit there.

        Raises AllocationError (the claim or a class is broken) or FailedOnNode (invalid pools here)."""
        pools = gather_pools(self.node_slices(node), node, self._index)
        plan: list[list[list[Request]]] = []  # claim -> request -> alternatives
        for ci, claim in enumerate(claims):
            requests = []
            minimum = 0
            for req in claim.spec.devices.requests or []:
                if req.exactly is not None:
                    e = req.exactly
                    alts = [
                        Request(
                            req.name,
                            req.name,
                            "",
                            e.device_class_name,
                            e.allocation_mode or "ExactCount",
                            e.count or 1,
                            bool(e.admin_access),
                            list(e.selectors or []),
                        )
                    ]
                elif req.first_available:
                    alts = [
                        Request(
                            f"{req.name}/{s.name}",
                            req.name,
                            s.name,
                            s.device_class_name,
                            s.allocation_mode or "ExactCount",
                            s.count or 1,
                            False,
                            list(s.selectors or []),
                        )
                        for s in req.first_available
                    ]
                else:
                    raise AllocationError(f"claim {claim_key(claim)}, request {req.name}: unknown request type")
                for alt in alts:
                    self._validate(ci, claim, alt, pools)
                minimum += min(a.num for a in alts)
                requests.append(alts)
            if minimum > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim_key(claim)}: number of requested devices {minimum} exceeds the claim limit of "
                    f"{ALLOCATION_RESULTS_MAX_SIZE}"
                )
            for i, c in enumerate(claim.spec.devices.constraints or []):
                if c.match_attribute is None and c.distinct_attribute is None:
                    raise AllocationError(
                        f"claim {claim_key(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
                if c.match_attribute is None:
                    raise AllocationError(
                        f"claim {claim_key(claim)}, constraint #{i}: distinctAttribute is not supported by kubesched"
                    )
            plan.append(requests)
        search = Search(self.selectable, self.allocated, claims, plan, pools)
        if not search.claim(0):
            if any(p.invalid for p in pools):
                raise FailedOnNode("invalid resource pools were encountered")
            return None
        return [self._result(claims[i], picks) for i, picks in enumerate(search.result)]

    def _validate(self, ci: int, claim: ResourceClaim, req: Request, pools: list[Pool]) -> None:
        for i, sel in enumerate(req.selectors):
            if sel.cel is None:
                raise AllocationError(
                    f"claim {claim_key(claim)}, request {req.name}, selector #{i}: CEL expression empty"
                    " (unsupported selector type?)"
                )
        if not req.class_name:
            raise AllocationError(
                f"claim {claim_key(claim)}, request {req.name}: missing device class name (unsupported request type?)"
            )
        req.device_class = self.classes(req.class_name)
        if req.device_class is None:
            raise AllocationError(
                f"claim {claim_key(claim)}, request {req.name}: could not retrieve device class {req.class_name}:"
                f' deviceclass.resource.k8s.io "{req.class_name}" not found'
            )
        if req.mode == "ExactCount":
            req.num = req.count
        elif req.mode == "All":
            for pool in pools:
                pid = f"{pool.driver}/{pool.name}"
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim_key(claim)}, request {req.name}: asks for all devices, but resource pool"
                        f" {pid} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim_key(claim)}, request {req.name}: asks for all devices, but resource pool"
                        f" {pid} is currently invalid"
                    )
                for s in pool.slices:
                    for d in s.spec.devices or []:
                        did = (s.spec.driver, s.spec.pool.name, d.name)
                        if self.selectable(ci, claim, req, did, d, s):
                            req.all_devices.append((did, d, s))
            req.num = len(req.all_devices)
        else:
            raise AllocationError(f"claim {claim_key(claim)}, request {req.name}: unsupported count mode {req.mode}")

    def selectable(
        self, ci: int, claim: ResourceClaim, req: Request, did: DeviceID, device: Device, s: ResourceSlice
    ) -> bool:
        if device.binding_conditions or device.consumes_counters:
            return False  # binding conditions and partitionable devices are off by default
        if device.taints and any(_repels(t) for t in device.taints):
            # Device taints (DRADeviceTaints, on by default in v1.37): kubesched does not read requests'
            # tolerations, so a tainted device is never allocated: a pod waits rather than lands on it.
            return False
        key = (ci, req.name, did)
        hit = self._matches.get(key)
        if hit is not None:
            return hit
        # A slice as stored by the API server (a resourceVersion) does not change under that version: what a
        # selector said of its device holds for later pods too.
        version = s.metadata.resource_version and (s.metadata.name, s.metadata.resource_version)
        ok = self._selectors(
            claim,
            did,
            device,
            req.device_class,
            (req.device_class.spec.selectors or []) if req.device_class else [],
            version,
        )
        ok = ok and self._selectors(claim, did, device, None, req.selectors, version)
        self._matches[key] = ok
        return ok

    def _selectors(
        self,
        claim: ResourceClaim,
        did: DeviceID,
        device: Device,
        cls: DeviceClass | None,
        selectors: list[DeviceSelector],
        version: tuple[str, str] | str = "",
    ) -> bool:
        where = f"class {cls.metadata.name}" if cls is not None else f"claim {claim_key(claim)}"
        for i, sel in enumerate(selectors):
            expression = sel.cel.expression if sel.cel else ""
            compiled = self.cache.get(expression)
            if compiled.error is not None:
                raise AllocationError(f"{where}: selector #{i}: CEL compile error: {compiled.error}")
            known = (expression, did, version) if version else None
            if known is not None and known in self.cache.results:
                if not self.cache.results[known]:
                    return False
                continue
            try:
                value = self._values.get(did)
                if value is None:
                    value = self._values[did] = device_value(did[0], device.attributes, device.capacity)
                matched = compiled.matches(value)
                if known is not None:
                    self.cache.remember(known, matched)
                if not matched:
                    return False
            except CELError as err:
                raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {err}") from None
        return True

    def _result(self, claim: ResourceClaim, picks: list[Pick]) -> AllocationResult:
        results = [
            DeviceRequestAllocationResult(
                request=p.request.name,
                driver=p.id[0],
                pool=p.id[1],
                device=p.id[2],
                admin_access=True if p.request.admin else None,
            )
            for p in picks
        ]
        config: list[DeviceAllocationConfiguration] = []
        seen: dict[str, list[DeviceAllocationConfiguration]] = {}
        for p in _dedupe_requests(picks):
            cls = p.request.device_class
            if cls is None:
                continue
            if cls.metadata.name in seen:
                for c in seen[cls.metadata.name]:
                    (c.requests or []).append(p.request.name)
                continue
            made = [
                DeviceAllocationConfiguration(source="FromClass", requests=[p.request.name], opaque=_opaque(c))
                for c in cls.spec.config or []
            ]
            seen[cls.metadata.name] = made
            config += made
        chosen = {p.request.name for p in picks}
        for cc in claim.spec.devices.config or []:
            names = cc.requests or []
            if not names or any(n in chosen or any(x.startswith(n + "/") for x in chosen) for n in names):
                config.append(DeviceAllocationConfiguration(source="FromClaim", requests=cc.requests, opaque=cc.opaque))
        return AllocationResult(
            devices=DeviceAllocationResult(results=results, config=config or None),
            node_selector=_node_selector(picks),
        )


def _opaque(config: Any) -> Any:
    return config.get("opaque") if isinstance(config, Mapping) else None


def _dedupe_requests(picks: list[Pick]) -> list[Pick]:
    seen: set[str] = set()
    out = []
    for p in picks:
        if p.request.name not in seen:
            seen.add(p.request.name)
            out.append(p)
    return out


def _node_selector(picks: list[Pick]) -> NodeSelector | None:
    fields: list[NodeSelectorRequirement] = []
    exprs: list[NodeSelectorRequirement] = []
    for p in picks:
        spec = p.slice.spec
        if spec.node_name:
            req = NodeSelectorRequirement(key="metadata.name", operator="In", values=[spec.node_name])
            return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_fields=[req])])
        if spec.node_selector is not None:
            terms = spec.node_selector.node_selector_terms or []
            if len(terms) > 1:
                raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
            if terms:
                fields += [r for r in terms[0].match_fields or [] if r not in fields]
                exprs += [r for r in terms[0].match_expressions or [] if r not in exprs]
    if fields or exprs:
        return NodeSelector(
            node_selector_terms=[NodeSelectorTerm(match_expressions=exprs or None, match_fields=fields or None)]
        )
    return None


def _repels(taint: object) -> bool:
    """A device taint that keeps untolerating requests off (NoSchedule, NoExecute; "None" only informs)."""
    return not isinstance(taint, dict) or taint.get("effect") in ("NoSchedule", "NoExecute", None)
