"""`memory.decide`: one pending pod on a snapshot, as the differential test asks kubesched."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.scheduler.memory import decide, decode_snapshot, snapshot_decider
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_pod, node_json


def pod(name: str, cpu: str, node: str = "", priority: int = 0, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": name}},
        "spec": {
            "nodeName": node,
            "priority": priority,
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


NODES = [
    node_json("big", alloc={"cpu": "4", "memory": "8Gi", "pods": "10"}),
    node_json("small", alloc={"cpu": "1", "memory": "8Gi", "pods": "10"}),
    node_json(
        "tainted", alloc={"cpu": "4", "memory": "8Gi", "pods": "10"}, taints=[{"key": "k", "effect": "NoSchedule"}]
    ),
]


async def test_a_pod_that_fits_some_nodes_gets_the_feasible_set_and_the_best_node() -> None:
    got_ = decode_snapshot({"nodes": NODES, "pods": [pod("p", "2")]})
    got = await decide(build_default, got_.nodes, got_.pods)
    assert got.feasible == ("big",) and got.best == ("big",) and got.node == "big" and got.message == ""


async def test_ties_are_all_in_the_best_set() -> None:
    twins = [node_json("a"), node_json("b")]
    got_ = decode_snapshot({"nodes": twins, "pods": [pod("p", "1")]})
    got = await decide(build_default, got_.nodes, got_.pods)
    assert got.feasible == ("a", "b") and got.best == ("a", "b") and got.node in ("a", "b")


async def test_a_pod_that_fits_nowhere_gets_kube_schedulers_message() -> None:
    got_ = decode_snapshot({"nodes": NODES, "pods": [pod("p", "8")]})
    got = await decide(build_default, got_.nodes, got_.pods)
    assert got.node is None and got.feasible == () and got.best == ()
    assert got.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )  # 8 cpu is more than either node has at all: unresolvable, as upstream's NodeResourcesFit says


async def test_preemption_names_the_node_and_the_victims() -> None:
    snapshot = [
        pod("low", "3500m", "big"),
        pod("high", "2", priority=1000, nodeSelector={"kubernetes.io/hostname": "big"}),
    ]
    nodes = [node_json("big", alloc={"cpu": "4", "pods": "10"}, labels={"kubernetes.io/hostname": "big"})]
    got_ = decode_snapshot({"nodes": nodes, "pods": snapshot})
    got = await decide(build_default, got_.nodes, got_.pods)
    assert got.node is None and got.nominated == "big" and got.victims == ("ns/low",)
    assert got.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement for pod on node big,"
        " preempting 1 victims"
    )


async def test_a_snapshot_without_a_pending_pod_is_an_error() -> None:
    got_ = decode_snapshot({"nodes": NODES, "pods": [pod("p", "1", "big")]})
    with pytest.raises(ValueError, match="no pending pod"):
        await decide(build_default, got_.nodes, got_.pods)


def test_the_snapshot_decider_builds_the_named_profile_from_api_objects() -> None:
    run = snapshot_decider({"percentageOfNodesToScore": 100})
    other = pod("p", "2")
    other["spec"]["schedulerName"] = "mine"
    got = run("mine", {"nodes": NODES, "pods": [other], "namespaces": [{"metadata": {"name": "ns"}}]})
    assert got.node == "big"


def test_services_of_the_snapshot_give_default_spreading_its_selector() -> None:
    service = {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"selector": {"app": "p"}}}
    got = decode_snapshot({"services": [service]})
    selected = make_pod("p", namespace="ns", labels={"app": "p"})
    other = make_pod("q", namespace="ns", labels={"app": "q"})
    assert got.workloads.default_selector(selected) is not None
    assert got.workloads.default_selector(other) is None
