"""NodeVolumeLimits (CSI) with kube-scheduler v1.35.4's semantics and messages (nodevolumelimits/csi.go)."""

from __future__ import annotations

from typing import Any

from kubesched.cluster.volumes import VolumeObjects
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_volume_limits import NodeVolumeLimits
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

from .conftest import claim_volume, csinode, pv, pvc, storage_class

EXCEEDED = Status.unschedulable("node(s) exceed max volume count")


def csi_pv(name: str, driver: str = "ebs.csi.aws.com") -> Any:
    return pv(name, claim=("default", name, f"uid-{name}"), csi={"driver": driver, "volumeHandle": f"h-{name}"})


def store_with(*claims: str, limit: int | None = 1) -> VolumeObjects:
    return VolumeObjects(
        pvs=[csi_pv(c) for c in claims],
        pvcs=[pvc(c, volume=c, bound=True) for c in claims],
        csinodes=[csinode("n1", ebs_csi_aws_com=limit), csinode("n2", ebs_csi_aws_com=5)],
    )


def check(store: VolumeObjects | None, pod: PodInfo, on_n1: list[PodInfo]) -> tuple[Status, list[Status | None]]:
    table = make_table([make_node("n1"), make_node("n2"), make_node("no-csinode")], {"n1": on_n1})
    plugin = NodeVolumeLimits(None, Handle(volumes=store))
    state = CycleState()
    pre = plugin.pre_filter(state, pod, table)
    if not pre.status.ok:
        return pre.status, []
    return pre.status, results(plugin.filter(state, pod, batch(table)))


def user(name: str, *claims: str, node: str | None = None) -> PodInfo:
    vols = [claim_volume(c, f"v{i}") for i, c in enumerate(claims)]
    return make_pod(name, uid=name, node_name=node, volumes=vols)


def test_pods_without_claims_or_migrated_disks_are_skipped() -> None:
    assert check(VolumeObjects(), make_pod("p"), [])[0].code == Code.SKIP
    assert check(VolumeObjects(), make_pod("p", volumes=[{"name": "t", "emptyDir": {}}]), [])[0].code == Code.SKIP


def test_the_limit_counts_unique_volumes_per_driver() -> None:
    store = store_with("a", "b")
    status, got = check(store, user("p", "b"), [user("holder", "a", node="n1")])
    assert status.ok and got == [EXCEEDED, None, None]  # n2 allows 5; no CSINode: no limit
    # The same volume already attached to the node counts once.
    assert check(store, user("p", "a"), [user("holder", "a", node="n1")])[1] == [None, None, None]
    assert check(store_with("a", "b", limit=2), user("p", "b"), [user("holder", "a", node="n1")])[1] == [None] * 3


def test_unbound_claims_count_for_their_class_provisioner() -> None:
    store = store_with("a")
    store.upsert_class(storage_class("ebs", provisioner="ebs.csi.aws.com"))
    store.upsert_pvc(pvc("fresh", sc="ebs"))
    assert check(store, user("p", "fresh"), [user("holder", "a", node="n1")])[1] == [EXCEEDED, None, None]


def test_inline_in_tree_disks_count_for_their_csi_driver_where_a_csinode_exists() -> None:
    store = store_with("a")
    ebs = make_pod("p", volumes=[{"name": "e", "awsElasticBlockStore": {"volumeID": "aws://zone/vol-9"}}])
    assert check(store, ebs, [user("holder", "a", node="n1")])[1] == [EXCEEDED, None, None]


def test_a_new_pods_missing_claim_is_unresolvable_with_upstreams_text() -> None:
    status, got = check(store_with(), user("p", "ghost"), [])
    assert status.ok
    assert got == [Status.unresolvable('looking up PVC default/ghost: persistentvolumeclaim "ghost" not found')] * 3


def test_no_storage_tracked_refuses_claims() -> None:
    status, _ = check(None, user("p", "a"), [])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "tracks no storage" in status.message
