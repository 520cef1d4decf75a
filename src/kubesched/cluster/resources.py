"""Dynamic resource allocation's objects (resource.k8s.io/v1): DeviceClasses, ResourceSlices, ResourceClaims.

Fed by list+watch (`source.scheduler_source`, only when the API server serves the group) or read from a
cluster file; DynamicResources reads them through the plugins' `ResourceAPI`. The one write, a claim's
allocation and reservation, goes through ``writer`` (the API server's status subresource, set by the live
scheduler); without one it is applied here (the in-memory cluster of ``--cluster FILE``). ``on_change`` is
told which kind changed, for the scheduler to move the pods waiting on it. Knows nothing of HTTP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

import msgspec

from kubesched.api.resource_v1 import (
    FINALIZER,
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceSlice,
)
from kubesched.core.podinfo import PodInfo

Writer = Callable[[ResourceClaim, AllocationResult | None, PodInfo], Awaitable[ResourceClaim]]


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def with_reservation(claim: ResourceClaim, allocation: AllocationResult | None, pod: PodInfo) -> ResourceClaim:
    """The claim with ``allocation`` (when given), the finalizer and the pod in reservedFor, as PreBind writes it."""
    status = claim.status
    reserved = [
        *(status.reserved_for or []),
        ResourceClaimConsumerReference(resource="pods", name=pod.name, uid=pod.uid),
    ]
    status = msgspec.structs.replace(status, reserved_for=reserved)
    meta = claim.metadata
    if allocation is not None:
        status = msgspec.structs.replace(status, allocation=allocation)
        if FINALIZER not in (meta.finalizers or []):
            meta = msgspec.structs.replace(meta, finalizers=[*(meta.finalizers or []), FINALIZER])
    return msgspec.structs.replace(claim, metadata=meta, status=status)


class ResourceObjects:
    """The store; ``served`` is False until a source says the cluster serves resource.k8s.io/v1."""

    def __init__(
        self,
        classes: Iterable[DeviceClass] = (),
        slices: Iterable[ResourceSlice] = (),
        claims: Iterable[ResourceClaim] = (),
        *,
        served: bool = True,
    ) -> None:
        self.served = served
        self.writer: Writer | None = None
        self.on_change: Callable[[str], None] = lambda _kind: None
        self._classes = {c.metadata.name: c for c in classes}
        self._slices = {s.metadata.name: s for s in slices}
        self._slice_list: tuple[ResourceSlice, ...] | None = None
        self._claims = {_key(c.metadata.namespace, c.metadata.name): c for c in claims}

    # ---- read (ResourceAPI) -----------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._claims.get(_key(namespace, name))

    def claims(self) -> Mapping[str, ResourceClaim]:
        return self._claims

    def device_class(self, name: str) -> DeviceClass | None:
        return self._classes.get(name)

    def slices(self) -> Sequence[ResourceSlice]:
        if self._slice_list is None:
            self._slice_list = tuple(sorted(self._slices.values(), key=lambda s: s.metadata.name))
        return self._slice_list

    async def reserve(self, claim: ResourceClaim, allocation: AllocationResult | None, pod: PodInfo) -> ResourceClaim:
        if self.writer is not None:
            stored = await self.writer(claim, allocation, pod)
        else:
            stored = with_reservation(claim, allocation, pod)
        self.upsert_claim(stored)  # as an assume cache: the watch's echo may come later
        return stored

    # ---- fed by a watch ---------------------------------------------------------------------------------

    def replace_classes(self, items: list[DeviceClass]) -> None:
        self._classes = {c.metadata.name: c for c in items}
        self.on_change("DeviceClass")

    def upsert_class(self, item: DeviceClass) -> None:
        self._classes[item.metadata.name] = item
        self.on_change("DeviceClass")

    def delete_class(self, item: DeviceClass) -> None:
        self._classes.pop(item.metadata.name, None)

    def replace_slices(self, items: list[ResourceSlice]) -> None:
        self._slices = {s.metadata.name: s for s in items}
        self._slice_list = None
        self.on_change("ResourceSlice")

    def upsert_slice(self, item: ResourceSlice) -> None:
        self._slices[item.metadata.name] = item
        self._slice_list = None
        self.on_change("ResourceSlice")

    def delete_slice(self, item: ResourceSlice) -> None:
        if self._slices.pop(item.metadata.name, None) is not None:
            self._slice_list = None

    def replace_claims(self, items: list[ResourceClaim]) -> None:
        self._claims = {_key(c.metadata.namespace, c.metadata.name): c for c in items}
        self.on_change("ResourceClaim")

    def upsert_claim(self, item: ResourceClaim) -> None:
        key = _key(item.metadata.namespace, item.metadata.name)
        old = self._claims.get(key)
        if old is not None and _older(item, old):
            return  # our own write came back first; this is the watch's stale copy
        self._claims[key] = item
        if (
            old is None
            or old.status != item.status
            or old.metadata.deletion_timestamp != item.metadata.deletion_timestamp
        ):
            self.on_change("ResourceClaim")

    def delete_claim(self, item: ResourceClaim) -> None:
        if self._claims.pop(_key(item.metadata.namespace, item.metadata.name), None) is not None:
            self.on_change("ResourceClaim")  # its devices are free again


def _older(new: ResourceClaim, old: ResourceClaim) -> bool:
    """Whether ``new`` has a lower resourceVersion than ``old`` (both numeric, the same object)."""
    a, b = new.metadata.resource_version, old.metadata.resource_version
    if not (a.isdigit() and b.isdigit()) or new.metadata.uid != old.metadata.uid:
        return False
    return int(a) < int(b)
