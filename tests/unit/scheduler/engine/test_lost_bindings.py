"""Items 9 and 10: a Binding whose answer was lost, a 409 'already assigned', and what a failed binding frees."""

from __future__ import annotations

import asyncio
import time

import msgspec
import pytest

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import BindingUnknownError, ClusterAPIError
from kubesched.scheduler.engine.queue import ACTIVE, BACKOFF, UNSCHEDULABLE, ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_node, make_pod_object
from kubesched.testing.waiting import until


def node(name: str, cpu: str = "1") -> Node:
    return make_node(name, alloc={"cpu": cpu, "pods": "10"})


def pod(name: str, cpu: str = "1", priority: int = 0) -> Pod:
    return make_pod_object(name, namespace="ns", uid="", requests={"cpu": cpu}, priority=priority)


class LossyCluster(MemoryCluster):
    """The in-memory cluster, with bindings whose answers get lost (applied or not) and a server that
    may not answer reads; the watch's events are held until `deliver`."""

    def __init__(self, nodes: list[Node], pods: list[Pod]) -> None:
        super().__init__(nodes, pods)
        self.lose: dict[str, bool] = {}  # pod name -> whether the lost Binding was applied
        self.fail: set[str] = set()  # pod names whose Binding is refused
        self.readable = True
        self.held: list[Pod] = []

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        if pod.name in self.fail:
            raise ClusterAPIError("binding rejected: etcd is having a bad day")
        applied = self.lose.pop(pod.name, None)
        if applied is None:
            return await super().bind(pod, node_name)
        if applied:
            obj = self.pods[pod.uid]
            obj = msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.spec, node_name=node_name))
            self.pods[pod.uid] = obj
            self.held.append(obj)
        raise BindingUnknownError(f"binding {pod.key}: the connection was reset before the answer")

    async def bound_node(self, pod: PodInfo) -> str | None:
        if not self.readable:
            raise ClusterAPIError("connection refused")
        return await super().bound_node(pod)

    def deliver(self) -> None:
        for obj in self.held:
            self._sched().pod_upserted(obj)
        self.held.clear()

    def on(self, node_name: str) -> list[str]:
        return sorted(p.metadata.name for p in self.pods.values() if p.spec.node_name == node_name)


class _NoReads(LossyCluster):
    """A backend that cannot read a pod back: only the TTL can end an unknown binding."""

    bound_node = None  # type: ignore[assignment]


def attached(cluster: MemoryCluster, **kw: float) -> Scheduler:
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=ManualClock(), **kw)  # type: ignore[arg-type]
    cluster.attach(scheduler)
    return scheduler


async def settle(scheduler: Scheduler, rounds: int = 3) -> None:
    for _ in range(rounds):
        while (entry := scheduler.queue.pop()) is not None:
            await scheduler.schedule_one(entry)
        for _ in range(5):
            await asyncio.sleep(0)


def uid(cluster: MemoryCluster, name: str) -> str:
    return next(u for u, p in cluster.pods.items() if p.metadata.name == name)


def reasons(cluster: MemoryCluster, name: str) -> list[str]:
    return [e.reason for e in cluster.events if e.regarding == f"ns/{name}"]


async def test_a_lost_answer_keeps_the_pod_counted_until_the_watch_tells() -> None:
    cluster = LossyCluster([node("a")], [pod("p1", priority=10)])
    cluster.lose["p1"] = True  # applied; its answer lost
    cluster.readable = False  # and the server does not answer reads either
    scheduler = attached(cluster)
    await settle(scheduler)
    assert scheduler.cache.pod_node(uid(cluster, "p1")) == "a"  # still counted there
    # A pod arriving now must not get p1's room (kube-scheduler would forget p1 and over-commit "a").
    late = msgspec.structs.replace(pod("p2"), metadata=msgspec.structs.replace(pod("p2").metadata, uid="uid-p2"))
    cluster.pods["uid-p2"] = late
    scheduler.pod_upserted(late)
    await settle(scheduler)
    assert cluster.on("a") == ["p1"]
    assert scheduler.queue.get("uid-p2") is not None
    cluster.deliver()  # the watch: p1 is bound to a
    await settle(scheduler)
    assert reasons(cluster, "p1") == ["Scheduled"]
    assert scheduler.queue.get(uid(cluster, "p1")) is None and not scheduler.cache.is_assumed(uid(cluster, "p1"))
    assert not scheduler._uncertain


async def test_a_lost_answer_is_settled_by_reading_the_pod() -> None:
    cluster = LossyCluster([node("a", "2")], [pod("applied", priority=10), pod("lost")])
    cluster.lose.update({"applied": True, "lost": False})
    scheduler = attached(cluster)
    await settle(scheduler)
    await until(lambda: not scheduler._uncertain, "no binding left uncertain", within=10)
    # Read back: "applied" is on a (confirmed, reported as scheduled); "lost" is not: forgotten and retried.
    assert scheduler.cache.pod_node(uid(cluster, "applied")) == "a"
    assert reasons(cluster, "applied") == ["Scheduled"]
    entry = scheduler.queue.get(uid(cluster, "lost"))
    assert entry is not None and entry.where == BACKOFF
    assert reasons(cluster, "lost") == ["FailedScheduling"]
    assert scheduler.cache.pod_node(uid(cluster, "lost")) is None
    scheduler.queue.clock.advance(60)  # type: ignore[attr-defined]
    await settle(scheduler)
    assert cluster.on("a") == ["applied", "lost"]


async def test_an_unknown_binding_stays_counted_past_the_ttl_until_the_server_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = LossyCluster([node("a")], [pod("p1")])
    cluster.lose["p1"] = False  # not applied; nobody can tell while reads fail
    cluster.readable = False
    scheduler = attached(cluster, binding_unknown_ttl=0.2)
    await settle(scheduler)
    u = uid(cluster, "p1")
    await until(lambda: "state unknown for 0.2s" in caplog.text, "the unknown-state log line", within=10)
    # Past the TTL, still counted: forgetting it would hand its room to the next pod as the server returns.
    assert scheduler.cache.pod_node(u) == "a" and u in scheduler._uncertain
    cluster.readable = True  # the server answers: p1 is not bound, so it is forgotten and retried
    await until(lambda: not scheduler._uncertain, "no binding left uncertain", within=10)
    assert scheduler.cache.pod_node(u) is None
    entry = scheduler.queue.get(u)
    assert entry is not None and entry.where == BACKOFF


async def test_without_reads_an_unknown_binding_is_forgotten_after_the_ttl() -> None:
    cluster = _NoReads([node("a")], [pod("p1")])
    cluster.lose["p1"] = False
    scheduler = attached(cluster, binding_unknown_ttl=0.3)
    await settle(scheduler)
    started = time.monotonic()
    await until(lambda: not scheduler._uncertain, "no binding left uncertain", within=10)
    assert time.monotonic() - started < 3
    assert scheduler.cache.pod_node(uid(cluster, "p1")) is None
    entry = scheduler.queue.get(uid(cluster, "p1"))
    assert entry is not None and entry.where == BACKOFF


async def test_already_assigned_records_the_pod_where_the_server_has_it() -> None:
    cluster = LossyCluster([node("a"), node("b")], [pod("p1")])
    scheduler = attached(cluster)
    u = uid(cluster, "p1")
    # Bound to b behind the scheduler's back (another scheduler; or our own earlier Binding), not seen yet.
    obj = cluster.pods[u]
    cluster.pods[u] = msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.spec, node_name="b"))
    await settle(scheduler)
    assert scheduler.cache.pod_node(u) == "b" and not scheduler.cache.is_assumed(u)
    assert scheduler.queue.get(u) is None
    assert "FailedScheduling" not in reasons(cluster, "p1")
    assert scheduler.placements["ns/p1"].node == "b"


async def test_a_failed_binding_moves_the_pods_its_room_turned_away() -> None:
    cluster = LossyCluster([node("a", "2")], [pod("big", "2", priority=10), pod("small", "1")])
    cluster.fail.add("big")
    scheduler = attached(cluster)
    while (entry := scheduler.queue.pop()) is not None:  # both cycles before the binding runs
        await scheduler.schedule_one(entry)
    small = scheduler.queue.get(uid(cluster, "small"))
    assert small is not None and small.where == UNSCHEDULABLE  # "big" holds a
    for _ in range(5):
        await asyncio.sleep(0)  # big's binding fails
    assert small.where in (ACTIVE, BACKOFF)  # moved at once, as kube-scheduler's AssignedPodDelete
    cluster.fail.clear()
    scheduler.queue.clock.advance(60)  # type: ignore[attr-defined]
    await settle(scheduler)
    assert cluster.on("a") == ["big"]  # retried first (priority), and nothing over-committed
