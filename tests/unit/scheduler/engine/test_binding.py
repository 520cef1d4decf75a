"""The Binder: binding cycles off the scheduling path; in memory batched into one task, elsewhere a task each."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import parse
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import BindPlugin, CycleState, Handle
from kubesched.framework.status import SUCCESS, Status
from kubesched.plugins import in_tree
from kubesched.plugins.default_binder import DefaultBinder
from kubesched.scheduler.engine.binding import _resume
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import Built, build, build_default
from kubesched.testing.builders import make_node, make_pod_object


def node(name: str, cpu: str = "2") -> Node:
    return make_node(name, alloc={"cpu": cpu, "pods": "10"})


def pod(name: str, cpu: str = "1") -> Pod:
    return make_pod_object(name, namespace="ns", uid="", requests={"cpu": cpu})


def attached(cluster: MemoryCluster) -> Scheduler:
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=ManualClock())
    cluster.attach(scheduler)
    return scheduler


async def schedule_all(scheduler: Scheduler) -> None:
    """Every pending pod through its scheduling cycle, without letting the loop turn."""
    while (entry := scheduler.queue.pop()) is not None:
        await scheduler.schedule_one(entry)


def bound(cluster: MemoryCluster) -> dict[str, str]:
    return {p.metadata.name: p.spec.node_name for p in cluster.pods.values() if p.spec.node_name}


async def test_in_memory_bindings_run_batched_after_the_scheduling_cycles() -> None:
    cluster = MemoryCluster([node("a"), node("b")], [pod("p1"), pod("p2"), pod("p3")])
    scheduler = attached(cluster)
    tasks = len(asyncio.all_tasks())
    await schedule_all(scheduler)
    # Off the scheduling path: nothing bound yet, all three in flight (and assumed), in one task.
    assert bound(cluster) == {} and len(scheduler.binder) > 0 and not scheduler.idle()
    assert all(scheduler.cache.is_assumed(p.metadata.uid) for p in cluster.pods.values())
    assert len(asyncio.all_tasks()) == tasks + 1
    await asyncio.sleep(0)  # one turn of the loop: the batch ran, in the order the pods were scheduled
    assert sorted(bound(cluster)) == ["p1", "p2", "p3"]
    assert [e.regarding for e in cluster.events if e.reason == "Scheduled"] == ["ns/p1", "ns/p2", "ns/p3"]
    assert not any(scheduler.cache.is_assumed(p.metadata.uid) for p in cluster.pods.values())
    assert {p.pod: p.node for p in cluster.placements()} == {f"ns/{k}": v for k, v in bound(cluster).items()}
    await scheduler.drain()
    assert not len(scheduler.binder) and scheduler.idle()


class ClusterBinder(BindPlugin):
    """A user's binder that declares it only binds through the cluster: it may be run inline."""

    name = "ClusterBinder"
    binds_through_cluster = True

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        assert self.handle.cluster is not None
        await self.handle.cluster.bind(pod, node_name)
        return SUCCESS


class AuditingBinder(DefaultBinder):
    """DefaultBinder plus an await of its own: overriding `bind` drops the inherited capability."""

    name = "AuditingBinder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        await asyncio.sleep(0)  # writes an audit record, say
        return await super().bind(state, pod, node_name)


def with_binder(plugin: type[BindPlugin]) -> Callable[[Callable[[str], Handle]], Built]:
    registry = in_tree()
    registry.register(plugin, "test")
    binders = {"enabled": [{"name": plugin.name}], "disabled": [{"name": "*"}]}
    head = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    config = parse({**head, "profiles": [{"schedulerName": "default-scheduler", "plugins": {"bind": binders}}]})
    return lambda make_handle: build(config, registry, make_handle)


@pytest.mark.parametrize(("plugin", "inline"), [(ClusterBinder, True), (AuditingBinder, False)])
async def test_a_bind_plugin_is_run_inline_only_when_it_declares_it_binds_through_the_cluster(
    plugin: type[BindPlugin], inline: bool
) -> None:
    assert plugin.binds_through_cluster is inline
    cluster = MemoryCluster([node("a"), node("b")], [pod("p1"), pod("p2"), pod("p3")])
    scheduler = Scheduler(ClusterCache(), cluster, with_binder(plugin), clock=ManualClock())
    cluster.attach(scheduler)
    tasks = len(asyncio.all_tasks())
    await schedule_all(scheduler)
    assert len(asyncio.all_tasks()) == tasks + (1 if inline else 3)  # one batch, or a task per binding cycle
    await scheduler.drain()
    assert sorted(bound(cluster)) == ["p1", "p2", "p3"]


async def test_drain_finishes_batched_bindings() -> None:
    cluster = MemoryCluster([node("a")], [pod("p1")])
    scheduler = attached(cluster)
    await schedule_all(scheduler)
    await scheduler.drain()
    assert bound(cluster) == {"p1": "a"} and not len(scheduler.binder)


class AwaitingCluster(MemoryCluster):
    """A cluster whose bind awaits (as the API server's does) until ``release`` is set."""

    def __init__(self, *args: Any, inline: bool) -> None:
        super().__init__(*args)
        self.binds_inline = inline  # type: ignore[misc]
        self.release = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.release.wait()
        finally:
            self.in_flight -= 1
        await super().bind(pod, node_name)


@pytest.mark.parametrize("inline", [False, True], ids=["awaiting-backend", "inline-backend-that-awaits"])
async def test_bindings_that_await_run_concurrently(inline: bool) -> None:
    cluster = AwaitingCluster([node("a"), node("b")], [pod("p1"), pod("p2"), pod("p3")], inline=inline)
    scheduler = attached(cluster)
    await schedule_all(scheduler)
    for _ in range(3):
        await asyncio.sleep(0)
    assert cluster.in_flight == 3 and bound(cluster) == {} and len(scheduler.binder) == 3
    cluster.release.set()
    await scheduler.drain()
    assert cluster.most_in_flight == 3 and sorted(bound(cluster)) == ["p1", "p2", "p3"]
    assert len([e for e in cluster.events if e.reason == "Scheduled"]) == 3
    assert not len(scheduler.binder)


async def test_a_failed_inline_binding_is_unreserved_and_requeued() -> None:
    cluster = MemoryCluster([node("a")], [pod("p1")])
    scheduler = attached(cluster)
    entry = scheduler.queue.pop()
    assert entry is not None
    await scheduler.schedule_one(entry)
    uid = entry.info.uid
    del cluster.pods[uid]  # the bind finds no pod: an error, as a vanished pod's bind would be
    await scheduler.drain()
    assert scheduler.cache.pod_node(uid) is None and uid in scheduler.queue
    assert cluster.conditions["ns/p1"][0] == "SchedulerError"
    assert 'pods "p1" not found' in cluster.conditions["ns/p1"][1]


async def test_a_coroutine_handed_to_a_task_gets_results_and_cancellation() -> None:
    loop = asyncio.get_running_loop()
    first, second = loop.create_future(), loop.create_future()
    seen: list[object] = []

    async def binding() -> str:
        seen.append(await first)
        try:
            await second
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "done"

    async def finish(started: Coroutine[Any, Any, str]) -> str:
        return await _resume(started, started.send(None))

    coro = binding()
    task = loop.create_task(finish(coro))
    await asyncio.sleep(0)
    first.set_result(1)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [1, "cancelled"]
    # And without a cancellation, the coroutine's result comes back.
    first, second = loop.create_future(), loop.create_future()
    coro = binding()
    task = loop.create_task(finish(coro))
    await asyncio.sleep(0)
    first.set_result(2)
    second.set_result(None)
    assert await task == "done" and seen[-1] == 2


async def test_scheduling_metrics_per_result_and_profile() -> None:
    cluster = MemoryCluster([node("a")], [pod("p1"), pod("p2"), pod("big", cpu="4")])
    scheduler = attached(cluster)
    assert isinstance(scheduler.queue.clock, ManualClock)
    await run_until_settled(scheduler, scheduler.queue.clock)
    text = scheduler.metrics.render().decode()
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 2.0' in text
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}' in text
    assert (
        'scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 2.0'
        in text
    )
    assert 'scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 2.0' in text
    assert 'scheduler_pending_pods{queue="unschedulable"} 1.0' in text
