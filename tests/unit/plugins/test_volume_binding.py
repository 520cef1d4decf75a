"""VolumeBinding with kube-scheduler v1.35.4's semantics and messages (volume_binding.go, binder.go)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.cluster.volumes import SELECTED_NODE, VolumeObjects
from kubesched.core.podinfo import PodInfo
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.plugins import in_tree
from kubesched.plugins.volume_binding import VolumeBinding, VolumeBindingArgs
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

from .conftest import HOST, claim_volume, pv, pvc, storage_class

NODES = [make_node(n, labels={HOST: n, "zone": z}) for n, z in (("n1", "a"), ("n2", "a"), ("n3", "b"))]


def plugin(store: VolumeObjects | None, **args: Any) -> VolumeBinding:
    return VolumeBinding(VolumeBindingArgs(**args), Handle(volumes=store))


def web(*claims: str) -> PodInfo:
    return make_pod("web", volumes=[claim_volume(c, f"v{i}") for i, c in enumerate(claims)])


def run(store: VolumeObjects, *claims: str) -> tuple[VolumeBinding, CycleState, list[Status | None]]:
    """PreFilter and Filter over NODES for ``web(*claims)``; the filter results per node."""
    vb = plugin(store)
    state = CycleState()
    pod = web(*claims)
    table = make_table(NODES)
    pre = vb.pre_filter(state, pod, table)
    assert pre.status.ok, pre.status
    return vb, state, results(vb.filter(state, pod, batch(table)))


def pre_status(store: VolumeObjects | None, pod_volumes: list[dict[str, Any]]) -> Status:
    return plugin(store).pre_filter(CycleState(), make_pod("web", volumes=pod_volumes), make_table(NODES)).status


def test_a_pod_without_claims_is_skipped_at_no_cost() -> None:
    assert pre_status(VolumeObjects(), []).code == Code.SKIP
    assert pre_status(VolumeObjects(), [{"name": "tmp", "emptyDir": {}}]).code == Code.SKIP


def test_a_missing_claim_is_unresolvable_with_the_api_error() -> None:
    status = pre_status(VolumeObjects(), [claim_volume("data")])
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'persistentvolumeclaim "data" not found',
    )


def test_a_missing_ephemeral_claim_waits_for_its_controller() -> None:
    status = pre_status(VolumeObjects(), [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])
    assert status.message == 'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"'
    store = VolumeObjects(pvcs=[pvc("web-scratch", sc="fast")])
    status = pre_status(store, [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])
    assert status.message == "PVC default/web-scratch was not created for pod default/web (pod is not owner)"


def test_an_ephemeral_claim_the_pod_owns_is_used_like_any_claim() -> None:
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "uid-web", "controller": True}
    owned = pvc("web-scratch", volume="pv-1", bound=True, ownerReferences=[owner])
    store = VolumeObjects(pvs=[pv("pv-1", on="n3", claim=("default", "web-scratch", "uid-web-scratch"))], pvcs=[owned])
    vb, state = plugin(store), CycleState()
    pod = make_pod("web", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])
    table = make_table(NODES)
    assert vb.pre_filter(state, pod, table).status.ok
    conflict = Status.unresolvable("node(s) didn't match PersistentVolume's node affinity")
    assert results(vb.filter(state, pod, batch(table))) == [conflict, conflict, None]


def test_lost_and_deleted_claims_are_unresolvable() -> None:
    lost = msgspec.structs.replace(
        pvc("data", volume="gone"), status=msgspec.structs.replace(pvc("x").status, phase="Lost")
    )
    assert pre_status(VolumeObjects(pvcs=[lost]), [claim_volume("data")]).message == (
        'persistentvolumeclaim "data" bound to non-existent persistentvolume "gone"'
    )
    deleting = pvc("data", deletionTimestamp="2026-01-01T00:00:00Z")
    assert pre_status(VolumeObjects(pvcs=[deleting]), [claim_volume("data")]).message == (
        'persistentvolumeclaim "data" is being deleted'
    )


def test_an_unbound_immediate_claim_waits_for_the_pv_controller() -> None:
    store = VolumeObjects(pvcs=[pvc("data", sc="std")], classes=[storage_class("std", "Immediate")])
    status = pre_status(store, [claim_volume("data")])
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pod has unbound immediate PersistentVolumeClaims",
    )
    # No class at all counts as Immediate too; a class without a binding mode is an error.
    assert pre_status(VolumeObjects(pvcs=[pvc("data")]), [claim_volume("data")]).message == (
        "pod has unbound immediate PersistentVolumeClaims"
    )
    broken = VolumeObjects(pvcs=[pvc("data", sc="odd")], classes=[storage_class("odd", None)])
    status = pre_status(broken, [claim_volume("data")])
    assert (status.code, status.message) == (Code.ERROR, 'VolumeBindingMode not set for StorageClass "odd"')


def test_no_storage_tracked_refuses_claims_instead_of_placing_blindly() -> None:
    status = pre_status(None, [claim_volume("data")])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "tracks no storage" in status.message
    assert pre_status(None, [{"name": "tmp", "emptyDir": {}}]).code == Code.SKIP


def test_a_bound_claim_keeps_the_pod_where_its_pv_is() -> None:
    store = VolumeObjects(pvs=[pv("local-1", on="n2", claim=("default", "data", "uid-data"))])
    store.upsert_pvc(pvc("data", volume="local-1", bound=True))
    _, _, got = run(store, "data")
    conflict = Status.unresolvable("node(s) didn't match PersistentVolume's node affinity")
    assert got == [conflict, None, conflict]


def test_a_claim_bound_to_a_missing_pv_fails_every_node() -> None:
    store = VolumeObjects(pvcs=[pvc("data", volume="gone", bound=True)])
    _, _, got = run(store, "data")
    assert got == [Status.unresolvable("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)")] * 3


def wffc(*pvs: PersistentVolume, claims: tuple[PersistentVolumeClaim, ...] = ()) -> VolumeObjects:
    return VolumeObjects(pvs=pvs, pvcs=claims or [pvc("data", sc="local")], classes=[storage_class("local")])


def test_wait_for_first_consumer_finds_a_pv_on_the_node_or_fails_with_bind_conflict() -> None:
    store = wffc(pv("on-n1", on="n1", sc="local"), pv("on-n3", on="n3", sc="local", size="1Gi"))  # 1Gi too small
    _, _, got = run(store, "data")
    conflict = Status.unresolvable("node(s) didn't find available persistent volumes to bind")
    assert got == [None, conflict, conflict]


def test_pvs_of_another_class_mode_or_phase_or_bound_elsewhere_do_not_match() -> None:
    store = wffc(
        pv("other-class", on="n1", sc="slow"),
        pv("rwx-only", on="n1", sc="local", modes=("ReadWriteMany",)),
        pv("released", on="n1", sc="local", phase="Released"),
        pv("taken", on="n1", sc="local", claim=("default", "other", "uid-other")),
        pv("block", on="n1", sc="local", volumeMode="Block"),
    )
    _, _, got = run(store, "data")
    assert got == [Status.unresolvable("node(s) didn't find available persistent volumes to bind")] * 3


def test_two_claims_do_not_share_one_pv_and_the_smallest_fits_first() -> None:
    claims = (pvc("small", "1Gi", sc="local"), pvc("big", "8Gi", sc="local"))
    store = wffc(
        pv("a-10g", on="n1", sc="local", size="10Gi"), pv("b-2g", on="n1", sc="local", size="2Gi"), claims=claims
    )
    vb, state, got = run(store, "big", "small")
    assert got[0] is None
    assert vb.reserve(state, web("big", "small"), "n1").ok
    bound = {p.metadata.name: p.spec.claim_ref.name for p in store.pvs_of_class("local") if p.spec.claim_ref}
    assert bound == {"a-10g": "big", "b-2g": "small"}  # the small claim took the smallest PV
    only_one = wffc(pv("a-10g", on="n1", sc="local", size="10Gi"), claims=claims)
    assert run(only_one, "big", "small")[2][0] == Status.unresolvable(
        "node(s) didn't find available persistent volumes to bind"
    )


def test_reserve_assumes_the_claim_ref_the_next_pod_sees_it_and_unreserve_restores() -> None:
    store = wffc(pv("on-n1", on="n1", sc="local"), claims=(pvc("data", sc="local"), pvc("more", sc="local")))
    vb, state, _ = run(store, "data")
    pod = web("data")
    assert vb.reserve(state, pod, "n1").ok
    assumed = store.pv("on-n1")
    assert assumed is not None and assumed.spec.claim_ref is not None
    assert (assumed.spec.claim_ref.name, assumed.spec.claim_ref.uid) == ("data", "uid-data")
    assert (assumed.metadata.annotations or {}).get("pv.kubernetes.io/bound-by-controller") == "yes"
    assert vb.pre_bind_pre_flight(state, pod, "n1").code == Code.SUCCESS
    # Another pod's claim no longer finds the PV while it is assumed.
    assert run(store, "more")[2][0] == Status.unresolvable("node(s) didn't find available persistent volumes to bind")
    vb.unreserve(state, pod, "n1")
    assert store.pv("on-n1") == store.api_pv("on-n1") and store.api_pv("on-n1").spec.claim_ref is None  # type: ignore[union-attr]
    assert run(store, "more")[2][0] is None


async def test_prebind_in_memory_binds_the_pv_and_its_claim() -> None:
    store = wffc(pv("on-n1", on="n1", sc="local"))
    vb, state, _ = run(store, "data")
    pod = web("data")
    assert vb.reserve(state, pod, "n1").ok
    assert (await vb.pre_bind(state, pod, "n1")).ok
    claim, volume = store.api_pvc("default", "data"), store.api_pv("on-n1")
    assert claim is not None and volume is not None
    assert claim.spec.volume_name == "on-n1" and volume.status.phase == "Bound"
    assert volume.spec.claim_ref is not None and volume.spec.claim_ref.name == "data"


def test_dynamic_provisioning_needs_a_provisioner_and_the_class_topology() -> None:
    topology = [{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}]
    store = VolumeObjects(
        pvcs=[pvc("data", sc="csi"), pvc("manual", sc="local")],
        classes=[
            storage_class("csi", provisioner="csi.example.com", allowedTopologies=topology),
            storage_class("local"),
        ],
    )
    vb, state, got = run(store, "data")
    conflict = Status.unresolvable("node(s) didn't find available persistent volumes to bind")
    assert got == [conflict, conflict, None]
    assert vb.reserve(state, web("data"), "n3").ok
    assumed = store.pvc("default", "data")
    assert assumed is not None and (assumed.metadata.annotations or {})[SELECTED_NODE] == "n3"
    # kubernetes.io/no-provisioner (the class "local") cannot provision anywhere.
    assert run(store, "manual")[2] == [conflict] * 3


def test_a_claim_with_a_selected_node_fits_only_there() -> None:
    store = VolumeObjects(
        pvcs=[pvc("data", sc="csi", annotations={SELECTED_NODE: "n2"})],
        classes=[storage_class("csi", provisioner="csi.example.com")],
    )
    conflict = Status.unresolvable("node(s) didn't find available persistent volumes to bind")
    assert run(store, "data")[2] == [conflict, None, conflict]


def test_reasons_combine_per_node_in_kube_schedulers_order() -> None:
    store = wffc(
        pv("fixed", on="n1", claim=("default", "held", "uid-held")),
        claims=(pvc("held", volume="fixed", bound=True), pvc("data", sc="local")),
    )
    _, _, got = run(store, "held", "data")
    both = Status.unresolvable(
        "node(s) didn't match PersistentVolume's node affinity",
        "node(s) didn't find available persistent volumes to bind",
    )
    assert got == [Status.unresolvable("node(s) didn't find available persistent volumes to bind"), both, both]


class Recording:
    """A VolumeAPI that stores the write as the API server would, and never completes the binding."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    async def update_pv(self, volume: PersistentVolume) -> PersistentVolume:
        self.writes.append(f"pv/{volume.metadata.name}")
        meta = msgspec.structs.replace(volume.metadata, resource_version="2")
        return msgspec.structs.replace(volume, metadata=meta)

    async def update_pvc(self, claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
        self.writes.append(f"pvc/{claim.metadata.name}")
        return claim


async def test_prebind_against_an_api_waits_for_the_pv_controller_then_times_out() -> None:
    store = wffc(pv("on-n1", on="n1", sc="local"))
    store.api = api = Recording()
    vb = plugin(store, bind_timeout_seconds=0)
    state = CycleState()
    pod = web("data")
    assert vb.pre_filter(state, pod, make_table(NODES)).status.ok
    vb.filter(state, pod, batch(make_table(NODES)))
    assert vb.reserve(state, pod, "n1").ok
    status = await vb.pre_bind(state, pod, "n1")
    assert api.writes == ["pv/on-n1"]
    assert (status.code, status.message) == (Code.ERROR, "binding volumes: context deadline exceeded")


async def test_prebind_succeeds_once_the_watch_shows_the_claim_bound() -> None:
    store = wffc(pv("on-n1", on="n1", sc="local"))
    store.api = Recording()
    vb = plugin(store, bind_timeout_seconds=30)
    vb.poll_interval = 0.01
    state = CycleState()
    pod = web("data")
    table = make_table(NODES)
    vb.pre_filter(state, pod, table)
    vb.filter(state, pod, batch(table))
    vb.reserve(state, pod, "n1")
    task = asyncio.ensure_future(vb.pre_bind(state, pod, "n1"))
    await asyncio.sleep(0.05)
    assert not task.done()
    store.upsert_pvc(pvc("data", sc="local", volume="on-n1", bound=True))  # the PV controller's work, watched
    assert (await asyncio.wait_for(task, 5)).ok


def test_args_are_validated_as_kube_scheduler_does() -> None:
    with pytest.raises(ValueError, match="invalid BindTimeoutSeconds, should not be a negative value"):
        plugin(VolumeObjects(), bind_timeout_seconds=-1)
    with pytest.raises(ValueError, match="kubesched does not implement StorageCapacityScoring"):
        plugin(VolumeObjects(), shape=[{"utilization": 0, "score": 0}])


def test_enabling_volume_binding_in_a_profile_builds() -> None:
    fw = Framework.build(ProfileSpec(plugins=(PluginRef("VolumeBinding"), PluginRef("DefaultBinder"))), in_tree())
    assert [p.name for p in fw.pre_bind] == ["VolumeBinding"] and [p.name for p, _ in fw.score] == ["VolumeBinding"]
    with pytest.raises(ConfigurationError, match="bindTimeoutSeconds"):
        Framework.build(
            ProfileSpec(
                plugins=(PluginRef("VolumeBinding"),), plugin_args={"VolumeBinding": {"bindTimeoutSeconds": -5}}
            ),
            in_tree(),
        )


def test_until_storage_is_listed_claims_wait_instead_of_being_reported_missing() -> None:
    store = VolumeObjects(listed=False)
    status = pre_status(store, [claim_volume("data")])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "to be listed" in status.message
    for replace in (store.replace_pvs, store.replace_pvcs, store.replace_classes, store.replace_csinodes):
        replace([])
    assert pre_status(store, [claim_volume("data")]).message == 'persistentvolumeclaim "data" not found'
