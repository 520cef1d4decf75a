"""The storage store: assumed versions in front of the API's until a newer one is watched, change events."""

from __future__ import annotations

import msgspec

from kubesched.api.storage import PersistentVolume
from kubesched.cluster.volumes import VolumeObjects


def pv(name: str, rv: str, sc: str = "local", claim: str | None = None) -> PersistentVolume:
    spec: dict[str, object] = {"storageClassName": sc, "capacity": {"storage": "1Gi"}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim, "uid": f"uid-{claim}"}
    return msgspec.convert({"metadata": {"name": name, "resourceVersion": rv}, "spec": spec}, PersistentVolume)


def test_an_assumed_pv_shows_until_the_watch_brings_a_newer_one() -> None:
    store = VolumeObjects(pvs=[pv("a", "5"), pv("b", "5", sc="other")])
    store.assume_pv(pv("a", "5", claim="data"))
    assert [p.spec.claim_ref is not None for p in store.pvs_of_class("local")] == [True]
    assert store.api_pv("a").spec.claim_ref is None  # type: ignore[union-attr]
    store.upsert_pv(pv("a", "5"))  # an echo of the same version keeps the assumed one
    assert store.pv("a").spec.claim_ref is not None  # type: ignore[union-attr]
    store.upsert_pv(pv("a", "6"))  # newer: the API's wins
    assert store.pv("a").spec.claim_ref is None  # type: ignore[union-attr]
    store.assume_pv(pv("a", "6", claim="data"))
    store.restore_pv("a")
    assert store.pv("a") == pv("a", "6")


def test_a_class_change_moves_the_pv_between_lists_and_changes_are_reported() -> None:
    seen: list[tuple[str, str]] = []
    store = VolumeObjects(pvs=[pv("a", "1")])
    store.on_change = lambda kind, action: seen.append((kind, action))
    store.upsert_pv(pv("a", "2", sc="other"))
    assert store.pvs_of_class("local") == [] and [p.metadata.name for p in store.pvs_of_class("other")] == ["a"]
    store.delete_pv(pv("a", "2"))
    assert store.pv("a") is None
    assert seen == [("PersistentVolume", "Update"), ("PersistentVolume", "Delete")]


def test_the_last_first_list_moves_the_pods_refused_meanwhile() -> None:
    seen: list[tuple[str, str]] = []
    store = VolumeObjects(listed=False)
    store.on_change = lambda kind, action: seen.append((kind, action))
    store.replace_pvcs([])
    store.replace_pvs([])
    store.replace_classes([])
    assert not store.synced
    store.replace_csinodes([])  # the last: a claim event every volume plugin registered follows
    assert store.synced and seen[-1] == ("PersistentVolumeClaim", "Add")
    seen.clear()
    store.replace_csinodes([])  # a relist later: just its own event
    assert seen == [("CSINode", "Add")]
