"""A PostFilter plugin's nomination: its victims are counted and its awaiting part runs off the scheduling path."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import parse
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interfaces import CycleState, PostFilterPlugin
from kubesched.framework.status import SUCCESS, Status
from kubesched.plugins import in_tree
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.profiles.manager import build


class Reclaim(PostFilterPlugin):
    """A user's PostFilter: nominates the first node, and reclaims it afterwards (an await)."""

    name = "Reclaim"
    reclaimed: list[str] = []

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> tuple[str | None, Status]:
        state[self.name] = 3
        return table.names[0], SUCCESS

    def victims(self, state: CycleState) -> int | None:
        count: int = state[self.name]
        return count

    async def after_nomination(self, state: CycleState, pod: PodInfo) -> Status:
        await asyncio.sleep(0)
        self.reclaimed.append(pod.name)
        return SUCCESS


def objects() -> tuple[Node, Pod]:
    node = msgspec.convert({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}}, Node)
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "4"}}}]}
    return node, msgspec.convert({"metadata": {"name": "big", "namespace": "ns", "uid": "big"}, "spec": spec}, Pod)


async def test_a_user_post_filter_s_victims_are_counted_and_its_after_nomination_runs() -> None:
    registry = in_tree()
    registry.register(Reclaim, "test")
    head = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    post = {"postFilter": {"enabled": [{"name": "Reclaim"}], "disabled": [{"name": "*"}]}}
    config = parse({**head, "profiles": [{"schedulerName": "default-scheduler", "plugins": post}]})
    node, pod = objects()
    cluster = MemoryCluster([node], [pod])
    scheduler = Scheduler(ClusterCache(), cluster, lambda mh: build(config, registry, mh), clock=ManualClock())
    cluster.attach(scheduler)
    entry = scheduler.queue.pop()
    assert entry is not None
    await scheduler.schedule_one(entry)
    for _ in range(5):  # a few turns of the loop: the background task runs
        await asyncio.sleep(0)
    assert Reclaim.reclaimed == ["big"]
    assert scheduler.nominator.node_of("big") == "n"
    assert b"scheduler_preemption_victims_sum 3.0" in scheduler.metrics.render()
