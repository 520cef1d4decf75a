"""VolumeRestrictions with kube-scheduler v1.35.4's semantics and messages (volume_restrictions.go)."""

from __future__ import annotations

from typing import Any

from kubesched.cluster.volumes import VolumeObjects
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.framework.status import Code, Status
from kubesched.plugins.volume_restrictions import VolumeRestrictions
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

from .conftest import claim_volume, pvc

DISK = "node(s) had no available disk"
RWOP = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)


def check(store: VolumeObjects | None, pod: PodInfo, on_nodes: dict[str, list[PodInfo]]) -> tuple[Status, list[Any]]:
    table = make_table([make_node("n1"), make_node("n2")], on_nodes)
    plugin = VolumeRestrictions(None, Handle(volumes=store))
    state = CycleState()
    pre = plugin.pre_filter(state, pod, table)
    if not pre.status.ok:
        return pre.status, []
    return pre.status, results(plugin.filter(state, pod, batch(table)))


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": pd, "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def test_pods_without_inline_disks_or_rwop_claims_are_skipped() -> None:
    assert check(VolumeObjects(), make_pod("p"), {})[0].code == Code.SKIP
    store = VolumeObjects(pvcs=[pvc("data")])
    assert check(store, make_pod("p", volumes=[claim_volume("data")]), {})[0].code == Code.SKIP


def test_a_missing_claim_is_unresolvable_with_the_api_error() -> None:
    status, _ = check(VolumeObjects(), make_pod("p", volumes=[claim_volume("data")]), {})
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'persistentvolumeclaim "data" not found',
    )


def test_the_same_gce_disk_conflicts_unless_both_read_only() -> None:
    user = make_pod("user", uid="u", node_name="n1", volumes=[gce("disk-1")])
    status, got = check(VolumeObjects(), make_pod("p", volumes=[gce("disk-1")]), {"n1": [user]})
    assert status.ok and got == [Status.unschedulable(DISK), None]
    reader = make_pod("reader", uid="r", node_name="n1", volumes=[gce("disk-1", True)])
    assert check(VolumeObjects(), make_pod("p", volumes=[gce("disk-1", True)]), {"n1": [reader]})[1] == [None, None]


def test_ebs_iscsi_and_rbd_conflicts() -> None:
    ebs = {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1"}}
    iscsi = {"name": "i", "iscsi": {"iqn": "iqn.x", "targetPortal": "t", "lun": 0}}
    rbd = {"name": "r", "rbd": {"monitors": ["m1", "m2"], "pool": "p", "image": "img"}}
    rbd_other_mon = {"name": "r", "rbd": {"monitors": ["m2"], "pool": "p", "image": "img"}}
    for mine, theirs in ((ebs, ebs), (iscsi, iscsi), (rbd, rbd_other_mon)):
        other = make_pod("o", uid="o", node_name="n2", volumes=[theirs])
        assert check(VolumeObjects(), make_pod("p", volumes=[mine]), {"n2": [other]})[1] == [
            None,
            Status.unschedulable(DISK),
        ]


def test_a_read_write_once_pod_claim_in_use_fails_every_node() -> None:
    store = VolumeObjects(pvcs=[pvc("solo", modes=("ReadWriteOncePod",))])
    holder = make_pod("holder", uid="h", node_name="n1", volumes=[claim_volume("solo")])
    status, got = check(store, make_pod("p", volumes=[claim_volume("solo")]), {"n1": [holder]})
    assert status.ok and got == [Status.unschedulable(RWOP)] * 2
    # The same name in another namespace is another claim.
    elsewhere = make_pod("holder", uid="h", namespace="other", node_name="n1", volumes=[claim_volume("solo")])
    assert check(store, make_pod("p", volumes=[claim_volume("solo")]), {"n1": [elsewhere]})[0].code == Code.SKIP


def test_no_storage_tracked_refuses_claims() -> None:
    status, _ = check(None, make_pod("p", volumes=[claim_volume("data")]), {})
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "tracks no storage" in status.message
