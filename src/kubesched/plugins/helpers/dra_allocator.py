"""The structured-parameters allocator of dynamic resource allocation (k8s.io/dynamic-resource-allocation's
stable allocator, with the features kube-scheduler enables by default: prioritized lists and admin access).

For one node and the pod's unallocated claims it searches, exhaustively and in slice order, devices of the
node's resource pools for every request: a device must pass its class's selectors and the request's, be
free (not allocated to another claim, nor to an earlier request here, unless admin access), and keep the
claim's matchAttribute constraints. The first full solution wins. Partitionable devices (counters),
consumable capacity and binding conditions are off by default upstream: such devices and slices are left out
as there. Device taints are on by default in v1.37; requests' tolerations are not read, so a tainted device is
never allocated (a pod waits rather than lands on it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from kubesched.errors import ClusterError, InputError
from kubesched.plugins.helpers.dra_cel import CELError, SelectorCache, device_value

DeviceID = tuple[str, str, str]  # driver, pool, device


class AllocationError(InputError):
    """Something is wrong with a claim or class: scheduling the pod fails with an error (upstream's statusError)."""


class FailedOnNode(ClusterError):
    """Not on this node, for a reason worth telling if no node fits (ErrFailedAllocationOnNode)."""


def claim_key(claim: ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


# ---- node selection ----------------------------------------------------------------------------------------


def _requirement(node: Node, req: NodeSelectorRequirement, fields: bool) -> bool:
    if fields:
        value: str | None = node.metadata.name if req.key == "metadata.name" else ""
    else:
        value = (node.metadata.labels or {}).get(req.key)
    values = req.values or []
    op = req.operator
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term(node: Node, term: NodeSelectorTerm) -> bool:
    exprs, flds = term.match_expressions or [], term.match_fields or []
    if not exprs and not flds:
        return False  # an empty term matches nothing
    return all(_requirement(node, r, False) for r in exprs) and all(_requirement(node, r, True) for r in flds)


def selector_matches(node: Node, selector: NodeSelector) -> bool:
    return any(_term(node, t) for t in selector.node_selector_terms or [])


def node_matches(node: Node, name: str | None, all_nodes: bool | None, selector: NodeSelector | None) -> bool:
    if name:
        return node.metadata.name == name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(node, selector)
    return False


# ---- pools -------------------------------------------------------------------------------------------------


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


# ---- requests ----------------------------------------------------------------------------------------------


@dataclass
class Request:
    """A request, or one subrequest of a firstAvailable list, as the search needs it."""

    name: str  # the request's name, or "request/subrequest"
    base: str  # the top-level request's name
    sub: str  # the subrequest's name, or ""
    class_name: str
    mode: str
    count: int
    admin: bool
    selectors: list[DeviceSelector]
    device_class: DeviceClass | None = None
    num: int = 0
    all_devices: list[tuple[DeviceID, Device, ResourceSlice]] = field(default_factory=list)


@dataclass
class _Pick:
    request: Request
    id: DeviceID
    device: Device
    slice: ResourceSlice


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
        search = _Search(self, node, claims, plan, pools)
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

    def _result(self, claim: ResourceClaim, picks: list[_Pick]) -> AllocationResult:
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


def _dedupe_requests(picks: list[_Pick]) -> list[_Pick]:
    seen: set[str] = set()
    out = []
    for p in picks:
        if p.request.name not in seen:
            seen.add(p.request.name)
            out.append(p)
    return out


def _node_selector(picks: list[_Pick]) -> NodeSelector | None:
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


class _Search:
    """allocateOne: depth-first over claims, requests (their alternatives in order) and devices."""

    def __init__(
        self,
        alloc: Allocator,
        node: Node,
        claims: Sequence[ResourceClaim],
        plan: list[list[list[Request]]],
        pools: list[Pool],
    ) -> None:
        self.alloc = alloc
        self.node = node
        self.claims = claims
        self.plan = plan
        self.pools = [p for p in pools if not p.incomplete and not p.invalid]
        self.result: list[list[_Pick]] = [[] for _ in claims]
        self.taken: dict[DeviceID, set[int]] = {}
        self.attr: list[list[tuple[Any, int]]] = [[(None, 0)] * len(c.spec.devices.constraints or []) for c in claims]

    def claim(self, ci: int) -> bool:
        if ci >= len(self.claims):
            return True
        return self.request(ci, 0)

    def request(self, ci: int, ri: int) -> bool:
        if ri >= len(self.plan[ci]):
            return self.claim(ci + 1)
        return any(self.device(ci, ri, alt, 0) for alt in self.plan[ci][ri])

    def device(self, ci: int, ri: int, req: Request, di: int) -> bool:
        if req.mode == "All" and not req.all_devices:
            return False
        if di >= req.num:
            return self.request(ci, ri + 1)
        if len(self.result[ci]) + req.num - di > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        if req.mode == "All":
            did, dev, s = req.all_devices[di]
            if not self.add(ci, req, did, dev, s, must=True):
                return False
            if self.device(ci, ri, req, di + 1):
                return True
            self.remove(ci, req, did)
            return False
        claim = self.claims[ci]
        for pool in self.pools:
            for s in pool.slices:
                for dev in s.spec.devices or []:
                    did = (pool.driver, pool.name, dev.name)
                    if not self.free(ci, req, did) or not self.alloc.selectable(ci, claim, req, did, dev, s):
                        continue
                    if not self.add(ci, req, did, dev, s, must=False):
                        continue
                    if self.device(ci, ri, req, di + 1):
                        return True
                    self.remove(ci, req, did)
        return False

    def free(self, ci: int, req: Request, did: DeviceID) -> bool:
        if req.admin:
            return ci not in self.taken.get(did, ())
        return did not in self.alloc.allocated and not self.taken.get(did)

    def add(self, ci: int, req: Request, did: DeviceID, dev: Device, s: ResourceSlice, must: bool) -> bool:
        if not self.free(ci, req, did):
            return False
        claim = self.claims[ci]
        constraints = claim.spec.devices.constraints or []
        applied: list[int] = []
        for k, c in enumerate(constraints):
            names = c.requests or []
            if names and req.base not in names and req.name not in names:
                continue
            attr = _lookup(dev, did, c.match_attribute or "")
            first, n = self.attr[ci][k]
            if attr is None or (n and attr != first):
                for j in applied:
                    v, m = self.attr[ci][j]
                    self.attr[ci][j] = (v, m - 1)
                if must:
                    raise AllocationError(
                        f"claim {claim_key(claim)}, request {req.name}: cannot add device {'/'.join(did)} because a"
                        " claim constraint would not be satisfied"
                    )
                return False
            self.attr[ci][k] = (attr if n == 0 else first, n + 1)
            applied.append(k)
        self.taken.setdefault(did, set()).add(ci)
        self.result[ci].append(_Pick(req, did, dev, s))
        return True

    def remove(self, ci: int, req: Request, did: DeviceID) -> None:
        claim = self.claims[ci]
        for k, c in enumerate(claim.spec.devices.constraints or []):
            names = c.requests or []
            if names and req.base not in names and req.name not in names:
                continue
            v, m = self.attr[ci][k]
            self.attr[ci][k] = (v, m - 1)
        self.taken[did].discard(ci)
        self.result[ci].pop()


def _lookup(dev: Device, did: DeviceID, name: str) -> Any:
    """lookupAttribute: the attribute by its full name, or without the domain when the domain is the driver."""
    attrs = dev.attributes or {}
    attr = attrs.get(name)
    if attr is None:
        domain, sep, ident = name.partition("/")
        if not sep or domain != did[0]:
            return None
        attr = attrs.get(ident)
        if attr is None:
            return None
    for value in (attr.string_value, attr.int_value, attr.bool_value, attr.version_value):
        if value is not None:
            return (type(value).__name__, value)
    return None


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


def _repels(taint: object) -> bool:
    """A device taint that keeps untolerating requests off (NoSchedule, NoExecute; "None" only informs)."""
    return not isinstance(taint, dict) or taint.get("effect") in ("NoSchedule", "NoExecute", None)
