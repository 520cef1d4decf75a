"""The structured allocator's search (allocateOne): depth-first over a node's claims, their requests (each
request's alternatives in order) and the devices of its complete, valid pools, keeping matchAttribute
constraints; the first full solution wins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.resource_v1 import (
    ALLOCATION_RESULTS_MAX_SIZE,
    Device,
    DeviceClass,
    DeviceSelector,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.plugins.helpers.dra_pools import AllocationError, DeviceID, Pool, claim_key

# Whether a device can serve a request of a claim (its class's and the request's selectors): claim index,
# claim, request, device id, device, its slice.
Selectable = Callable[[int, ResourceClaim, "Request", DeviceID, Device, ResourceSlice], bool]


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
class Pick:
    request: Request
    id: DeviceID
    device: Device
    slice: ResourceSlice


class Search:
    """allocateOne: depth-first over claims, requests (their alternatives in order) and devices."""

    def __init__(
        self,
        selectable: Selectable,
        allocated: set[DeviceID],
        claims: Sequence[ResourceClaim],
        plan: list[list[list[Request]]],
        pools: list[Pool],
    ) -> None:
        self.selectable = selectable
        self.allocated = allocated
        self.claims = claims
        self.plan = plan
        self.pools = [p for p in pools if not p.incomplete and not p.invalid]
        self.result: list[list[Pick]] = [[] for _ in claims]
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
                    if not self.free(ci, req, did) or not self.selectable(ci, claim, req, did, dev, s):
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
        return did not in self.allocated and not self.taken.get(did)

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
            attr = lookup(dev, did, c.match_attribute or "")
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
        self.result[ci].append(Pick(req, did, dev, s))
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


def lookup(dev: Device, did: DeviceID, name: str) -> Any:
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
