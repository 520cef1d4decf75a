"""Queueing hints: a node event moves a parked pod only if the node passes the plugins that rejected it."""

from __future__ import annotations

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_node, make_pod_object


def node(name: str, cpu: str, taints: list[dict[str, str]] | None = None) -> Node:
    return make_node(name, alloc={"cpu": cpu, "pods": "10"}, taints=taints or ())


def pod(name: str, cpu: str) -> Pod:
    return make_pod_object(name, namespace="ns", uid=name, requests={"cpu": cpu})


async def parked(nodes: list[Node], pods: list[Pod]) -> tuple[Scheduler, ManualClock]:
    cluster = MemoryCluster(nodes, pods)
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock)
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    return scheduler, clock


async def test_a_node_too_small_for_the_pod_leaves_it_parked_a_big_enough_one_moves_it() -> None:
    scheduler, _ = await parked([node("small", "1")], [pod("big", "4")])
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.node_upserted(node("also-small", "2"))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1  # NodeResourcesFit rejects the new node too
    scheduler.node_upserted(node("large", "8"))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0


async def test_a_tainted_node_leaves_a_pod_the_taints_rejected_parked() -> None:
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    scheduler, _ = await parked([node("t1", "8", taint)], [pod("p", "1")])
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.node_upserted(node("t2", "8", taint))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.node_upserted(node("t1", "8"))  # the taint removed: an update that helps
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0


def bound(name: str, labels: dict[str, str], node_name: str = "n") -> Pod:
    spec = {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    meta = {"name": name, "namespace": "ns", "uid": name, "labels": labels}
    return msgspec.convert({"metadata": meta, "spec": spec}, Pod)


async def test_a_pod_added_helps_a_pod_with_required_affinity_only_if_it_matches_the_terms() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    waiting = pod("web", "1")
    waiting = msgspec.structs.replace(
        waiting,
        spec=msgspec.convert(
            {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
            },
            type(waiting.spec),
        ),
    )
    host = msgspec.convert(
        {
            "metadata": {"name": "n", "labels": {"kubernetes.io/hostname": "n"}},
            "status": {"allocatable": {"cpu": "8", "pods": "10"}},
        },
        Node,
    )
    scheduler, _ = await parked([host], [waiting])
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.pod_upserted(bound("cache", {"app": "cache"}))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1  # no term matches it
    scheduler.pod_upserted(bound("db", {"app": "db"}))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0


async def test_a_pod_event_helps_a_spread_pod_only_if_the_pod_counts_for_its_constraints() -> None:
    # The node lacks the constraint's topology key: PodTopologySpread rejects the pod there.
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    waiting = msgspec.convert(
        {
            "metadata": {"name": "w", "namespace": "ns", "uid": "w", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c"}], "topologySpreadConstraints": spread},
        },
        Pod,
    )
    scheduler, _ = await parked([node("n", "8")], [waiting])
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.pod_upserted(bound("other", {"app": "other"}))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1  # the selector does not match it
    scheduler.pod_deleted(bound("other", {"app": "other"}))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.pod_upserted(bound("web-1", {"app": "web"}))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0
