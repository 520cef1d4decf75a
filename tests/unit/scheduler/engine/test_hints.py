"""Queueing hints: a cluster event moves a parked pod only if a plugin that rejected it registered the event
and its hint, if any, says the event may help."""

from __future__ import annotations

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import parse
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import (
    CLAIM_CHANGE,
    CLASS_CHANGE,
    NODE_CHANGE,
    SLICE_CHANGE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    registrations,
)
from kubesched.framework.interfaces import CycleState, Handle, NodeFilterPlugin, NodeInfo
from kubesched.framework.status import SUCCESS, Status
from kubesched.plugins import in_tree
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import build, build_default
from kubesched.testing.builders import make_node, make_pod_object


def node(name: str, cpu: str, taints: list[dict[str, str]] | None = None, **labels: str) -> Node:
    return make_node(name, alloc={"cpu": cpu, "pods": "10"}, taints=taints or (), labels=labels or None)


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


def resized(name: str, spec_cpu: str, running_cpu: str, node_name: str = "n") -> Pod:
    spec = {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": spec_cpu}}}]}
    status = {"phase": "Running", "containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": running_cpu}}}]}
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec, "status": status}, Pod
    )


async def test_a_bound_pod_still_running_larger_than_its_spec_blocks_and_its_resize_down_moves_the_parked_pod() -> None:
    # Spec lowered to 1 cpu, the kubelet still runs it with 3: kube-scheduler counts 3 of the node's 4.
    scheduler, clock = await parked([node("n", "4")], [resized("shrinking", "1", "3"), pod("wants-2", "2")])
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.pod_upserted(resized("shrinking", "1", "1"))  # the resize is done: an UpdatePodScaleDown event
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0
    await run_until_settled(scheduler, clock)
    assert scheduler.cache.pod_node("wants-2") == "n"


ADD_UPDATE = ("ADD", "UPDATE")


def storage(kind: str, action: str) -> ClusterEvent:
    return ClusterEvent(EventResource(kind), ActionType[action])


# The events each in-tree Filter plugin registers, and whether a hint is asked (the table the scheduler
# kept before the plugins declared them: PLUGIN_EVENTS, NODE_LOCAL hinted by their Filter on the node).
NODE_EVENTS = {q.NODE_ADD: True, q.NODE_UPDATE: True}
DRA_EVENTS = {e: False for x in (CLAIM_CHANGE, SLICE_CHANGE, CLASS_CHANGE) for e in x.atoms()}
SPREAD = {q.NODE_ADD: False, q.NODE_UPDATE: False, q.POD_ADD: True, q.POD_UPDATE: True, q.POD_DELETE: True}
DECLARED = {
    "NodeUnschedulable": NODE_EVENTS,
    "NodeName": {q.NODE_ADD: True},
    "TaintToleration": NODE_EVENTS,
    "NodeAffinity": NODE_EVENTS,
    "NodePorts": {q.NODE_ADD: False, q.POD_DELETE: False},
    "NodeResourcesFit": {**NODE_EVENTS, q.POD_DELETE: False, q.POD_UPDATE: False},  # resized down in place
    "PodTopologySpread": SPREAD,
    "InterPodAffinity": SPREAD,
    # The volume plugins: storage events without hints (any such event moves the pods they rejected).
    "VolumeRestrictions": {q.POD_DELETE: False, q.NODE_ADD: False, storage("PersistentVolumeClaim", "ADD"): False},
    "NodeVolumeLimits": {
        storage("CSINode", "ADD"): False,
        storage("CSINode", "UPDATE"): False,
        q.POD_DELETE: False,
        storage("PersistentVolumeClaim", "ADD"): False,
    },
    "VolumeBinding": {
        **{storage(kind, a): False for kind in ("StorageClass", "PersistentVolumeClaim") for a in ("ADD", "UPDATE")},
        **{storage(kind, a): False for kind in ("PersistentVolume", "CSINode") for a in ("ADD", "UPDATE")},
        q.NODE_ADD: False,
        q.NODE_UPDATE: False,
    },
    "VolumeZone": {
        storage("StorageClass", "ADD"): False,
        q.NODE_ADD: False,
        q.NODE_UPDATE: False,
        **{
            storage(kind, a): False for kind in ("PersistentVolumeClaim", "PersistentVolume") for a in ("ADD", "UPDATE")
        },
    },
    "DynamicResources": {**{e: False for e in NODE_CHANGE.atoms()}, **DRA_EVENTS},
    "NodeDeclaredFeatures": NODE_EVENTS,  # upstream: Node Add|UpdateNodeDeclaredFeature
}


def test_the_in_tree_plugins_declare_the_events_and_hints_of_before() -> None:
    fw = build_default(lambda name: Handle(scheduler_name=name)).profiles["default-scheduler"].framework
    declared = {p.name: registrations(p.events_to_register()) for p in fw.filter}
    assert {name: {e: bool(h) for e, h in (r or {}).items()} for name, r in declared.items()} == DECLARED


class Picky(NodeFilterPlugin):
    """A user's Filter: only nodes labelled picky=yes."""

    name = "Picky"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS if (node.node.metadata.labels or {}).get("picky") == "yes" else Status.unschedulable("not picky")


class DeclaredPicky(Picky):
    """The same, declaring that only a node added or changed may help, if it passes the filter."""

    name = "DeclaredPicky"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_CHANGE, self.passes_node)]


async def parked_by(plugin: type[Picky]) -> Scheduler:
    registry = in_tree()
    registry.register(plugin, "test")
    head = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    plugins = {"filter": {"enabled": [{"name": plugin.name}]}}
    config = parse({**head, "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]})
    cluster = MemoryCluster([node("n", "8")], [pod("p", "1")])
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, lambda mh: build(config, registry, mh), clock=clock)
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    return scheduler


async def test_a_user_plugin_that_declares_nothing_is_moved_by_every_event() -> None:
    scheduler = await parked_by(Picky)
    scheduler.pod_upserted(bound("other", {"app": "x"}))  # any event at all
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0


async def test_a_user_plugin_s_declared_events_and_hint_are_honoured() -> None:
    scheduler = await parked_by(DeclaredPicky)
    scheduler.pod_upserted(bound("other", {"app": "x"}))  # not registered
    scheduler.node_upserted(node("m", "8"))  # registered, but the hint says no
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.node_upserted(node("m", "8", picky="yes"))  # the node changed: now it helps
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0


def declaring(name: str, *features: str) -> Node:
    body = msgspec.to_builtins(node(name, "8"))
    body.setdefault("status", {})["declaredFeatures"] = list(features)
    return msgspec.convert(body, Node)


async def test_a_node_that_comes_to_declare_the_feature_the_pod_needs_moves_it() -> None:
    """Only status.declaredFeatures changes (as when a kubelet restarts with the feature on): a node update."""
    needs = make_pod_object(
        "p",
        namespace="ns",
        uid="p",
        containers=[{"name": "c", "restartPolicyRules": [{"action": "RestartAllContainers"}]}],
    )
    scheduler, _ = await parked([declaring("n")], [needs])
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1
    scheduler.node_upserted(declaring("n", "SomethingElse"))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 1  # the hint: it still lacks the feature
    scheduler.node_upserted(declaring("n", "RestartAllContainersOnContainerExits"))
    assert scheduler.queue.pending()[q.UNSCHEDULABLE] == 0
