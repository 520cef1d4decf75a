"""The in-memory cluster behind the real scheduler: preemption with and without a PodDisruptionBudget."""

from __future__ import annotations

import msgspec
import pytest

from kubesched.api.core import Node, Pod
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.cluster.cache import ClusterCache
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_pod_object


def pod(name: str, priority: int, node: str = "", labels: dict[str, str] | None = None) -> Pod:
    return make_pod_object(
        name, namespace="ns", uid="", labels=labels or {}, requests={"cpu": "1"}, node_name=node, priority=priority
    )


@pytest.mark.parametrize(("with_pdb", "evicted"), [(False, "ns/protected"), (True, "ns/other")])
async def test_preemption_picks_victims_and_respects_pdbs(with_pdb: bool, evicted: str) -> None:
    node = msgspec.convert({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "2", "pods": "10"}}}, Node)
    pods = [pod("protected", 5, "n", {"app": "p"}), pod("other", 20, "n"), pod("high", 1000)]
    pdbs = [
        msgspec.convert(
            {"metadata": {"name": "b", "namespace": "ns"}, "spec": {"selector": {"matchLabels": {"app": "p"}}}},
            PodDisruptionBudget,
        )
    ]
    cluster = MemoryCluster([node], pods, pdbs if with_pdb else [])
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock)
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    assert [e.regarding for e in cluster.events if e.reason == "Preempted"] == [evicted]
    placed = {p.pod: p.node for p in cluster.placements()}
    assert placed == {"ns/high": "n"}
    scheduled = [e for e in cluster.events if e.reason == "Scheduled"]
    assert scheduled[0].note == "Successfully assigned ns/high to n" and scheduled[0].reporting_controller == (
        "default-scheduler"
    )
