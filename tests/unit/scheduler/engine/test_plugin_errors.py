"""Item 6: a plugin that raises fails that pod's attempt (Error, backoff, retried), never the scheduler."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import parse
from kubesched.core.nodetable import IntColumn, NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import (
    BindPlugin,
    CycleState,
    FilterPlugin,
    Handle,
    NodeBatch,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.status import SUCCESS, Code, Status, Verdicts
from kubesched.plugins import in_tree
from kubesched.scheduler.engine.queue import BACKOFF, ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.profiles.manager import Built, build
from kubesched.testing.builders import make_node, make_pod_object

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


class Boom(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
    BindPlugin,
    PostBindPlugin,
):
    """Raises KeyError at ``point`` for pods labelled bad=yes; harmless everywhere else."""

    name: ClassVar[str] = "Boom"
    point: ClassVar[str] = ""

    def _maybe(self, point: str, pod: PodInfo) -> None:
        if point == self.point and pod.labels.get("bad") == "yes":
            raise KeyError("zone")

    def pre_enqueue(self, pod: PodInfo) -> Status:
        self._maybe("PreEnqueue", pod)
        return SUCCESS

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        self._maybe("PreFilter", pod)
        return PreFilterResult()

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        self._maybe("Filter", pod)
        return Verdicts.all_pass(len(nodes))

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Any
    ) -> tuple[str | None, Status]:
        self._maybe("PostFilter", pod)
        return None, Status.unschedulable("nothing to preempt")

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        self._maybe("PreScore", pod)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        self._maybe("Score", pod)
        return np.zeros(len(nodes), dtype=np.int64)

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        self._maybe("NormalizeScore", pod)
        return scores

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self._maybe("Reserve", pod)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        self._maybe("Permit", pod)
        return SUCCESS, 0.0

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self._maybe("PreBind", pod)
        return SUCCESS

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self._maybe("Bind", pod)
        return Status(Code.SKIP)  # DefaultBinder binds

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._maybe("PostBind", pod)


def node(name: str) -> Node:
    return make_node(name, alloc={"cpu": "4", "pods": "10"})


def pod(name: str, bad: bool = False, cpu: str = "100m") -> Pod:
    labels = {"bad": "yes"} if bad else {}
    return make_pod_object(name, namespace="ns", uid="", labels=labels, requests={"cpu": cpu})


def builder(plugin: type[Boom], bind_first: bool = False) -> Callable[[Callable[[str], Handle]], Built]:
    registry = in_tree()
    registry.register(plugin, "test")
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": "Boom"}]}}
    if bind_first:  # Boom's Bind before DefaultBinder's
        plugins["bind"] = {"enabled": [{"name": "Boom"}, {"name": "DefaultBinder"}], "disabled": [{"name": "*"}]}
    config = parse({**HEAD, "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]})
    return lambda make_handle: build(config, registry, make_handle)


async def settle(scheduler: Scheduler, rounds: int = 3) -> None:
    """Schedule what is active, let the bindings run; a few rounds."""
    import asyncio

    for _ in range(rounds):
        while (entry := scheduler.queue.pop()) is not None:
            await scheduler.schedule_one(entry)
        for _ in range(5):
            await asyncio.sleep(0)


POINTS = [
    ("PreEnqueue", None),
    ("PreFilter", "running PreFilter plugin \"Boom\": KeyError: 'zone'"),
    ("Filter", "running \"Boom\" filter plugin: KeyError: 'zone'"),
    ("PostFilter", "running PostFilter plugin \"Boom\": KeyError: 'zone'"),
    ("PreScore", "running PreScore plugin \"Boom\": KeyError: 'zone'"),
    ("Score", "running Score plugins: plugin \"Boom\" failed with: KeyError: 'zone'"),
    ("NormalizeScore", "running Normalize on Score plugins: plugin \"Boom\" failed with: KeyError: 'zone'"),
    ("Reserve", "running Reserve plugin \"Boom\": KeyError: 'zone'"),
    ("Permit", "running Permit plugin \"Boom\": KeyError: 'zone'"),
    ("PreBind", "running PreBind plugin \"Boom\": KeyError: 'zone'"),
    ("Bind", "running Bind plugin \"Boom\": KeyError: 'zone'"),
]


@pytest.mark.parametrize(("point", "message"), POINTS)
async def test_a_plugin_raising_fails_only_that_pod_which_backs_off_and_is_retried(
    point: str, message: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = type("Boom", (Boom,), {"point": point})
    bad_cpu = "64" if point == "PostFilter" else "100m"  # PostFilter runs only for a pod that fits nowhere
    cluster = MemoryCluster([node("a"), node("b")], [pod("good-0"), pod("bad", True, bad_cpu), pod("good-1")])
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, builder(plugin, bind_first=point == "Bind"), clock=clock)
    cluster.attach(scheduler)
    with caplog.at_level(logging.ERROR):
        await settle(scheduler)
    bound = {p.metadata.name: p.spec.node_name for p in cluster.pods.values() if p.spec.node_name}
    assert sorted(bound) == ["good-0", "good-1"]
    bad = next(p for p in cluster.pods.values() if p.metadata.name == "bad")
    entry = scheduler.queue.get(bad.metadata.uid)
    assert entry is not None and entry.where == BACKOFF
    assert not scheduler.cache.is_assumed(bad.metadata.uid) and scheduler.cache.pod_node(bad.metadata.uid) is None
    # The traceback is in the log, with the plugin and the pod.
    records = [r for r in caplog.records if r.exc_info and "Boom" in r.getMessage()]
    assert records and "ns/bad" in records[0].getMessage()
    metric = scheduler.metrics.render().decode()
    assert (
        f'kubesched_scheduler_plugin_errors_total{{extension_point="{point}",plugin="Boom",'
        f'profile="default-scheduler"}} 1.0' in metric
    )
    if message is not None:
        assert cluster.conditions["ns/bad"] == ("SchedulerError", message)
        assert [e.note for e in cluster.events if e.reason == "FailedScheduling"] == [message]
    attempts = entry.attempts
    clock.advance(60)
    await settle(scheduler, 1)
    again = scheduler.queue.get(bad.metadata.uid)
    assert again is not None and again.attempts > attempts  # retried, and failing again


async def test_post_bind_raising_leaves_the_pod_bound(caplog: pytest.LogCaptureFixture) -> None:
    plugin = type("Boom", (Boom,), {"point": "PostBind"})
    cluster = MemoryCluster([node("a")], [pod("bad", True)])
    scheduler = Scheduler(ClusterCache(), cluster, builder(plugin), clock=ManualClock())
    cluster.attach(scheduler)
    with caplog.at_level(logging.ERROR):
        await settle(scheduler)
    assert [p.spec.node_name for p in cluster.pods.values()] == ["a"]
    assert any(r.exc_info and 'running PostBind plugin "Boom"' in r.getMessage() for r in caplog.records)


class BoomSort(QueueSortPlugin):
    name: ClassVar[str] = "BoomSort"

    def sort_key(self, pod: PodInfo, queued_at: float) -> tuple[Any, ...]:
        if pod.labels.get("bad") == "yes":
            raise KeyError("zone")
        return (-pod.priority, queued_at)


async def test_a_queue_sort_key_raising_fails_that_pod_only() -> None:
    registry = in_tree()
    registry.register(BoomSort, "test")
    plugins = {"queueSort": {"enabled": [{"name": "BoomSort"}], "disabled": [{"name": "*"}]}}
    config = parse({**HEAD, "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]})
    cluster = MemoryCluster([node("a")], [pod("good-0"), pod("bad", True), pod("good-1")])
    scheduler = Scheduler(ClusterCache(), cluster, lambda mh: build(config, registry, mh), clock=ManualClock())
    cluster.attach(scheduler)
    await settle(scheduler)
    assert sorted(p.metadata.name for p in cluster.pods.values() if p.spec.node_name) == ["good-0", "good-1"]
    assert cluster.conditions["ns/bad"] == ("SchedulerError", "running QueueSort plugin \"BoomSort\": KeyError: 'zone'")


async def test_an_unexpected_error_outside_the_plugins_fails_the_pod_not_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = MemoryCluster([node("a")], [pod("p")])
    scheduler = Scheduler(ClusterCache(), cluster, builder(Boom), clock=ManualClock())
    cluster.attach(scheduler)

    async def broken(*_: Any) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(scheduler.cycle, "run", broken)  # past every guard of the cycle: the loop's own
    await settle(scheduler)
    assert cluster.conditions["ns/p"] == ("SchedulerError", "scheduling cycle failed: RuntimeError: bug")
    assert scheduler.queue.get(next(iter(cluster.pods))) is not None
