"""`simulate`: a scenario played by the embedded scheduler, deterministically; what each step records."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import Node, Pod
from kubesched.cluster.files import ClusterFile
from kubesched.config.profiles import parse as parse_config
from kubesched.scheduler.profiles.manager import build_default, load
from kubesched.scheduler.simulate import play as play_module
from kubesched.scheduler.simulate.actions import SimulationError
from kubesched.scheduler.simulate.model import Simulation
from kubesched.scheduler.simulate.play import Options, simulate
from kubesched.scheduler.simulate.scenario import parse
from kubesched.testing.builders import node_json


def pod_json(name: str, cpu: str = "1", node: str = "", priority: int = 0, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", **meta},
        "spec": {
            "nodeName": node,
            "priority": priority,
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
    }


def cluster(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> ClusterFile:  # type: ignore[assignment]
    return ClusterFile(nodes=[msgspec.convert(n, Node) for n in nodes], pods=[msgspec.convert(p, Pod) for p in pods])


TEMPLATE = {
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
}


def steps(*items: dict[str, Any]) -> Any:
    return parse({"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "steps": list(items)})


async def sim(scenario: Any, found: ClusterFile, seed: int = 0, records: bool = True, b: bool = False) -> Simulation:
    builds = [("", build_default)] + ([("B", build_default)] if b else [])
    return await simulate(
        scenario,
        found,
        builds,
        Options(seed=seed, records=records),
        kubernetes_version="v1.37.2",
        cluster="c.yaml",
        scenario_file="s.yaml",
    )


def placements(s: Simulation, run: int = 0) -> dict[str, str | None]:
    return {d.pod: d.node for d in s.runs[run].final}


IDENTICAL = [node_json(f"n{i}", alloc={"cpu": "4", "memory": "8Gi", "pods": "110"}) for i in range(12)]
SPREAD = steps({"addPods": {"replicas": 6, "name": "web", "namespace": "ns", "template": TEMPLATE}})


async def test_the_same_seed_gives_the_same_placements() -> None:
    first = await sim(SPREAD, cluster(IDENTICAL), seed=7)
    again = await sim(SPREAD, cluster(IDENTICAL), seed=7)
    assert placements(first) == placements(again)
    assert all(placements(first).values())  # every pod placed, so the comparison compares nodes
    assert msgspec.json.encode(first) == msgspec.json.encode(again)  # the whole record, not only the nodes


async def test_another_seed_breaks_the_ties_otherwise() -> None:
    # Twelve identical empty nodes: every first pick is a tie; the seed decides it.
    seen = {tuple(sorted(placements(await sim(SPREAD, cluster(IDENTICAL), seed=s)).items())) for s in range(6)}
    assert len(seen) > 1


async def test_add_nodes_with_used_fraction_and_zones() -> None:
    scenario = steps(
        {
            "addNodes": {
                "count": 4,
                "namePrefix": "gpu",
                "zones": ["a", "b"],
                "used": {"example.com/gpu": 0.3, "cpu": 0.5},
                "template": {"status": {"allocatable": {"cpu": "8", "memory": "32Gi", "example.com/gpu": "8"}}},
            }
        }
    )
    s = await sim(scenario, cluster([]))
    nodes = {n.name: n for n in s.runs[0].steps[0].nodes}
    assert sorted(nodes) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert [nodes[f"gpu-{i}"].zone for i in range(4)] == ["a", "b", "a", "b"]
    gpu = nodes["gpu-1"].resources["example.com/gpu"]
    assert (gpu.requested, gpu.allocatable) == (2, 8)  # 30% of 8, rounded down
    assert nodes["gpu-1"].resources["cpu"].requested == 4000
    agg = s.runs[0].steps[0].aggregate
    assert agg.nodes == 4 and agg.nodes_used == 0 and agg.pods_bound == 4  # filler pods do not "use" a node
    frag = agg.fragmentation[0]
    assert (frag.resource, frag.nodes, frag.partially_used, frag.stranded, frag.free, frag.largest_free) == (
        "example.com/gpu",
        4,
        4,
        24,
        24,
        6,
    )
    cpu = next(x for x in agg.spread if x.resource == "cpu")
    assert (cpu.p50, cpu.p99) == (0.5, 0.5)


async def test_decisions_messages_and_preemption_per_step() -> None:
    found = cluster(
        [node_json("only", alloc={"cpu": "2", "memory": "8Gi", "pods": "110"})],
        [pod_json("low", "2", node="only"), pod_json("waiting", "1")],
    )
    scenario = steps(
        {"name": "more", "addPods": {"replicas": 1, "name": "big", "namespace": "ns", "template": TEMPLATE}},
        {"name": "replay", "replayPending": True},
        {
            "name": "urgent",
            "addPods": {
                "replicas": 1,
                "name": "vip",
                "namespace": "ns",
                "template": {"spec": {**TEMPLATE["spec"], "priority": 100}},
            },
        },
    )
    s = await sim(scenario, found)
    first, second, third = s.runs[0].steps
    assert [d.pod for d in first.decisions] == ["ns/big-0"]  # the file's pending pod waits for replayPending
    assert first.decisions[0].node is None
    assert first.decisions[0].message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    # Only the pods the step attempted: big-0 stays parked (nothing it waits for changed), as in kube-scheduler.
    assert [d.pod for d in second.decisions] == ["ns/waiting"]
    # The eviction frees room: the parked pods are tried again after the preemptor.
    assert [d.pod for d in third.decisions] == ["ns/vip-0", "ns/waiting", "ns/big-0"]
    assert [(p.victim, p.preemptor, p.node) for p in third.preemptions] == [("ns/low", "ns/vip-0", "only")]
    assert third.preemptions[0].message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert third.aggregate.preemptions == 1
    assert placements(s)["ns/vip-0"] == "only"


async def test_drain_recreates_controller_pods_pending_and_remove_deletes_the_node() -> None:
    nodes = [node_json(n, alloc={"cpu": "4", "memory": "8Gi", "pods": "110"}, labels={"pool": n}) for n in "ab"]
    owned = pod_json("owned", node="a", ownerReferences=[{"kind": "ReplicaSet", "name": "rs", "controller": True}])
    found = cluster(nodes, [owned, pod_json("bare", node="a")])
    scenario = steps({"drain": {"names": ["a"]}}, {"removeNodes": {"selector": {"matchLabels": {"pool": "b"}}}})
    s = await sim(scenario, found)
    drain, remove = s.runs[0].steps
    assert drain.actions == ["drain: 1 node(s) a; 2 pod(s) evicted, 1 recreated pending"]
    assert [(d.pod, d.node) for d in drain.decisions] == [("ns/owned", "b")]  # the cordoned node is not used
    assert [n.unschedulable for n in drain.nodes] == [True, False]
    assert remove.actions == ["removeNodes: 1 node(s) b; 1 pod(s) evicted, 1 recreated pending"]
    assert [n.name for n in remove.nodes] == ["a"] and placements(s)["ns/owned"] is None
    assert "1 node(s) were unschedulable" in s.runs[0].final[0].message


async def test_delete_pods_by_name_and_selector() -> None:
    found = cluster(IDENTICAL[:2], [pod_json("x", node="n0", labels={"app": "x"}), pod_json("y", node="n1")])
    s = await sim(steps({"deletePods": {"selector": {"matchLabels": {"app": "x"}}}}, {"deletePods": ["ns/y"]}), found)
    assert [st.aggregate.pods_bound for st in s.runs[0].steps] == [1, 0]


async def test_unknown_node_and_clashing_names_are_refused() -> None:
    with pytest.raises(SimulationError, match=r"steps\[0\]\.drain\.names\[0\]: no node 'nope' in the cluster"):
        await sim(steps({"drain": ["nope"]}), cluster(IDENTICAL[:1]))
    clash = steps({"addNodes": {"count": 1, "namePrefix": "n", "template": {"status": {"allocatable": {"cpu": "1"}}}}})
    with pytest.raises(SimulationError, match=r"steps\[0\]\.addNodes\.namePrefix: node 'n-0' exists already"):
        await sim(clash, cluster([node_json("n-0")]))


async def test_records_off_keeps_the_aggregates_only() -> None:
    on = await sim(SPREAD, cluster(IDENTICAL), records=True)
    off = await sim(SPREAD, cluster(IDENTICAL), records=False)
    assert on.runs[0].steps[0].decisions and on.runs[0].steps[0].nodes and on.runs[0].final
    assert not off.runs[0].steps[0].decisions and not off.runs[0].steps[0].nodes and not off.runs[0].final
    assert off.runs[0].steps[0].aggregate == on.runs[0].steps[0].aggregate


async def test_compare_the_same_configuration_differs_nowhere() -> None:
    s = await sim(SPREAD, cluster(IDENTICAL), b=True)
    assert s.comparison is not None
    assert s.comparison.pods == [] and s.comparison.same == 6
    assert all(d.a == d.b for d in s.comparison.aggregate)
    assert [r.label for r in s.runs] == ["A", "B"]


BINPACK = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
            ],
        }
    ],
}


async def test_compare_two_configurations_pod_by_pod_and_in_aggregate() -> None:
    # One node half full, one empty: spreading (LeastAllocated) and packing (MostAllocated) part ways.
    nodes = [node_json(n, alloc={"cpu": "4", "memory": "8Gi", "pods": "110"}) for n in ("full", "empty")]
    found = cluster(nodes, [pod_json("there", "2", node="full")])
    scenario = steps({"addPods": {"replicas": 1, "name": "new", "namespace": "ns", "template": TEMPLATE}})
    packing = load(parse_config(BINPACK)).build
    s = await simulate(
        scenario,
        found,
        [("", build_default), ("binpack.yaml", packing)],
        Options(),
        kubernetes_version="v1.37.2",
        cluster="c",
        scenario_file="s",
    )
    assert s.comparison is not None
    assert [(p.pod, p.a, p.b) for p in s.comparison.pods] == [("ns/new-0", "empty", "full")]
    deltas = {d.metric: (d.a, d.b) for d in s.comparison.aggregate}
    assert deltas["nodesUsed"] == (2, 1) and deltas["podsPlaced"] == (1, 1)
    # Same mean, wider spread when packed: 2/4 and 1/4 against 3/4 and 0.
    assert deltas["cpu.p50"] == (0.375, 0.375) and deltas["cpu.p99"] == (0.4975, 0.7425)
    assert s.runs[1].config == "binpack.yaml"


async def test_replay_happens_once_and_delete_pods_by_namespace() -> None:
    found = cluster(IDENTICAL[:1], [pod_json("p"), {**pod_json("q"), "metadata": {"name": "q", "namespace": "other"}}])
    s = await sim(
        steps({"replayPending": True}, {"replayPending": True}, {"deletePods": {"namespace": "other", "selector": {}}}),
        found,
    )
    assert s.runs[0].steps[1].actions == ["replayPending: already replayed"]
    assert s.runs[0].steps[2].actions == ["deletePods: 1 pod(s) deleted"]
    assert {d.pod: d.node for d in s.runs[0].final} == {"ns/p": "n0", "other/q": None}


async def test_records_stop_at_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(play_module, "MAX_RECORDS", 32)  # 12 node states before, then 12 and 6 decisions
    s = await sim(
        steps(
            {"addPods": {"replicas": 6, "name": "a", "namespace": "ns", "template": TEMPLATE}},
            {"deletePods": ["ns/a-0"]},
        ),
        cluster(IDENTICAL),
    )
    first, second = s.runs[0].steps
    assert len(first.nodes) == 12 and len(first.decisions) == 6 and second.nodes == []
    assert s.runs[0].notes == [
        "records stopped at step 1: more than 32 pod decisions and node states"
        " (the aggregates go on; --no-records, or fewer steps or nodes)"
    ]
    assert second.aggregate.pods_bound == 5


async def test_compare_without_records_still_compares_pod_by_pod() -> None:
    s = await sim(SPREAD, cluster(IDENTICAL), records=False, b=True)
    assert s.comparison is not None and s.comparison.same == 6 and not s.runs[0].final
