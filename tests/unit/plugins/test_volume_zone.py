"""VolumeZone with kube-scheduler v1.35.4's semantics and messages (volume_zone.go)."""

from __future__ import annotations

from kubesched.cluster.volumes import VolumeObjects
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.framework.status import Code, Status
from kubesched.plugins.volume_zone import VolumeZone
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

from .conftest import claim_volume, pv, pvc, storage_class

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
CONFLICT = Status.unresolvable("node(s) had no available volume zone")
NODES = [
    make_node("a", labels={ZONE: "z1"}),
    make_node("b", labels={BETA_ZONE: "z2"}),
    make_node("c", labels={ZONE: "z3"}),
    make_node("unlabelled"),
]


def check(store: VolumeObjects | None, claim: str = "data") -> tuple[Status, list[Status | None]]:
    plugin = VolumeZone(None, Handle(volumes=store))
    pod = make_pod("p", volumes=[claim_volume(claim)])
    table = make_table(NODES)
    state = CycleState()
    pre = plugin.pre_filter(state, pod, table)
    if not pre.status.ok:
        return pre.status, []
    return pre.status, results(plugin.filter(state, pod, batch(table)))


def bound_to(*pvs: object) -> VolumeObjects:
    return VolumeObjects(pvs=pvs, pvcs=[pvc("data", volume="vol", bound=True)])  # type: ignore[arg-type]


def test_a_pv_zone_keeps_the_pod_in_it_and_zoneless_nodes_pass() -> None:
    status, got = check(bound_to(pv("vol", labels={ZONE: "z1"})))
    assert status.ok and got == [None, CONFLICT, CONFLICT, None]


def test_beta_labels_match_ga_node_labels_and_a_list_of_zones() -> None:
    _, got = check(bound_to(pv("vol", labels={BETA_ZONE: "z1__z2"})))
    assert got == [None, None, CONFLICT, None]
    # A list holding an empty zone is ignored, as upstream (logged there).
    assert check(bound_to(pv("vol", labels={ZONE: "z1__"})))[0].code == Code.SKIP


def test_pvs_without_zone_labels_and_unbound_wffc_claims_are_skipped() -> None:
    assert check(bound_to(pv("vol")))[0].code == Code.SKIP
    wffc = VolumeObjects(pvcs=[pvc("data", sc="local")], classes=[storage_class("local")])
    assert check(wffc)[0].code == Code.SKIP


def test_prefilter_messages() -> None:
    def message(store: VolumeObjects) -> tuple[Code, str]:
        status = check(store)[0]
        return status.code, status.message

    unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert message(VolumeObjects()) == (unresolvable, 'persistentvolumeclaim "data" not found')
    assert message(VolumeObjects(pvcs=[pvc("data")])) == (
        unresolvable,
        "PersistentVolumeClaim had no pv name and storageClass name",
    )
    assert message(VolumeObjects(pvcs=[pvc("data", sc="gone")])) == (
        unresolvable,
        'storageclass.storage.k8s.io "gone" not found',
    )
    odd = VolumeObjects(pvcs=[pvc("data", sc="odd")], classes=[storage_class("odd", None)])
    assert message(odd) == (unresolvable, 'VolumeBindingMode not set for StorageClass "odd"')
    now = VolumeObjects(pvcs=[pvc("data", sc="std")], classes=[storage_class("std", "Immediate")])
    assert message(now) == (unresolvable, "PersistentVolume had no name")
    assert message(bound_to()) == (unresolvable, 'persistentvolume "vol" not found')
    assert check(VolumeObjects(), claim="")[0].message == "PersistentVolumeClaim had no name"
