"""The store of DeviceClasses, ResourceSlices and ResourceClaims: what it tells the scheduler, its one write."""

from __future__ import annotations

import msgspec

from kubesched.api.core import Pod
from kubesched.api.resource_v1 import FINALIZER, AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.cluster.resources import ResourceObjects
from kubesched.core.podinfo import compile_pod


def claim(rv: str, allocated: bool = False) -> ResourceClaim:
    status = {"allocation": {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "x"}]}}}
    body = {"metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": rv}}
    return msgspec.convert({**body, "status": status if allocated else {}}, ResourceClaim)


def test_changes_are_told_by_kind_and_a_stale_echo_is_ignored() -> None:
    store, told = ResourceObjects(), []
    store.on_change = told.append
    store.upsert_claim(claim("5"))
    store.upsert_claim(claim("5"))  # nothing changed in its status: no event
    store.upsert_claim(claim("7", allocated=True))
    store.upsert_claim(claim("6"))  # older than what we hold (our own write came back first)
    held = store.claim("ns", "c")
    assert held is not None and held.metadata.resource_version == "7"
    store.upsert_slice(msgspec.convert({"metadata": {"name": "s"}}, ResourceSlice))
    store.upsert_class(msgspec.convert({"metadata": {"name": "k"}}, DeviceClass))
    store.delete_claim(claim("8"))
    assert told == ["ResourceClaim", "ResourceClaim", "ResourceSlice", "DeviceClass", "ResourceClaim"]
    assert store.claim("ns", "c") is None and [s.metadata.name for s in store.slices()] == ["s"]


async def test_without_a_writer_the_reservation_is_applied_in_memory() -> None:
    store = ResourceObjects(claims=[claim("1")])
    pod = compile_pod(msgspec.convert({"metadata": {"name": "p", "namespace": "ns", "uid": "pu"}}, Pod))
    allocation = msgspec.convert(
        {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "x"}]}}, AllocationResult
    )
    stored = await store.reserve(claim("1"), allocation, pod)
    assert store.claim("ns", "c") == stored
    assert stored.status.allocation == allocation and FINALIZER in (stored.metadata.finalizers or [])
    assert [(r.resource, r.name, r.uid) for r in stored.status.reserved_for or []] == [("pods", "p", "pu")]
