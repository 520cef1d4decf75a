"""`explain`: one pod's cycle on a snapshot, every node and plugin recorded, the real cycle's answer."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.scheduler.explain.decider import decision, explain_decider
from kubesched.scheduler.explain.evaluate import ExplainError, Objects, explain
from kubesched.scheduler.explain.model import Explanation
from kubesched.scheduler.memory import decide, decode_snapshot, snapshot_decider
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import node_json
from tests.unit.scheduler.test_memory_decide import pod  # the same API-shaped pod as memory.decide's tests

TAINT = [{"key": "gpu", "value": "shared", "effect": "NoSchedule"}]
NODES = [
    node_json("big", alloc={"cpu": "4", "memory": "8Gi", "pods": "10"}),
    node_json("small", alloc={"cpu": "1", "memory": "8Gi", "pods": "10"}),
    node_json("tainted", alloc={"cpu": "4", "memory": "8Gi", "pods": "10"}, taints=TAINT),
    node_json("tiny-tainted", alloc={"cpu": "1", "memory": "8Gi", "pods": "10"}, taints=TAINT),
]


async def run(pods: list[dict[str, Any]], wanted: str, nodes: list[dict[str, Any]] = NODES) -> Explanation:
    got = decode_snapshot({"nodes": nodes, "pods": pods})
    return await explain(build_default, Objects(got.nodes, got.pods, got.namespaces), wanted, "v1.37.2")


def by_name(ex: Explanation) -> dict[str, Any]:
    return {n.name: n for n in ex.nodes}


FILLER = pod("x", "3500m", "big")  # big keeps 500m free


async def test_a_pod_that_fits_nowhere_gets_every_nodes_reason_and_kube_schedulers_message() -> None:
    ex = await run([FILLER, pod("p", "2")], "ns/p")
    nodes = by_name(ex)
    assert ex.node is None and not any(n.feasible for n in ex.nodes)
    assert ex.message.startswith("0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint(s).")
    assert nodes["big"].reported.reason == "Insufficient cpu" and nodes["big"].reported.code == "Unschedulable"
    assert nodes["small"].reported.plugin == "NodeResourcesFit" and nodes["small"].reported.reason == "Insufficient cpu"
    assert nodes["tainted"].reported.plugin == "TaintToleration"
    # kube-scheduler stops at the first failing plugin; explain asks every one: the tiny tainted node fails both.
    assert nodes["tiny-tainted"].reported.plugin == "TaintToleration"
    assert {v.plugin for v in nodes["tiny-tainted"].failed} == {"TaintToleration", "NodeResourcesFit"}
    assert {v.plugin for v in nodes["small"].failed} == {"NodeResourcesFit"}


async def test_the_message_and_feasible_set_are_the_deciders_on_the_same_snapshot() -> None:
    for cpu in ("2", "8", "500m"):
        snapshot = {"nodes": NODES, "pods": [pod("p", cpu), pod("x", "3500m", "big")]}
        got = decode_snapshot(snapshot)
        old = await decide(build_default, got.nodes, got.pods)
        ex = decision(await run(snapshot["pods"], "ns/p"))
        assert (ex.node, ex.message, ex.feasible, ex.best) == (old.node, old.message, old.feasible, old.best), cpu


async def test_scores_are_raw_normalized_and_weighted_and_the_chosen_node_leads() -> None:
    nodes = [node_json(n, alloc={"cpu": c, "memory": "8Gi", "pods": "10"}) for n, c in (("a", "8"), ("b", "4"))]
    ex = await run([pod("p", "1")], "ns/p", nodes)
    assert ex.node == "a" and ex.runner_up == "b" and ex.margin is not None and ex.margin > 0
    for n in ex.nodes:
        assert n.scored and n.total == sum(s.weighted for s in n.scores)
        for s in n.scores:
            assert s.weighted == s.normalized * s.weight and 0 <= s.normalized <= 100
    fit = {n.name: next(s for s in n.scores if s.plugin == "NodeResourcesFit") for n in ex.nodes}
    assert fit["a"].raw > fit["b"].raw  # LeastAllocated: the emptier node scores higher
    assert ex.sample is not None and ex.sample.feasible == 2


async def test_what_would_help_reruns_the_filters_with_one_change() -> None:
    ex = await run([FILLER, pod("p", "2")], "ns/p")
    helps = {h.change: h for h in ex.help}
    toleration = helps["if it tolerated `gpu=shared:NoSchedule`"]
    assert toleration.opened == ["tainted"] and toleration.nodes == 1
    cpu = helps["without its cpu request"]
    assert cpu.opened == ["big", "small"] and "asks 2 cpu" in cpu.detail and "at most 1 free" in cpu.detail
    assert [h.nodes for h in ex.help] == sorted((h.nodes for h in ex.help), reverse=True)


async def test_a_spread_constraint_that_blocks_is_named() -> None:
    zones = [
        node_json(n, alloc={"cpu": c, "pods": "10"}, labels={"zone": z, "kubernetes.io/hostname": n})
        for n, z, c in (("a1", "a", "4"), ("b1", "b", "100m"))
    ]
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]  # fmt: skip

    def web(name: str, node: str = "", **spec: Any) -> dict[str, Any]:
        body = pod(name, "500m", node, **spec)
        body["metadata"]["labels"] = {"app": "web"}
        return body

    ex = await run([web("w1", "a1"), web("p", topologySpreadConstraints=spread)], "ns/p", zones)
    assert ex.node is None
    nodes = by_name(ex)
    assert nodes["a1"].reported.plugin == "PodTopologySpread" and nodes["b1"].reported.plugin == "NodeResourcesFit"
    spread_help = next(h for h in ex.help if h.change == "without PodTopologySpread maxSkew 1 on zone")
    assert spread_help.opened == ["a1"] and spread_help.detail == "topologySpreadConstraints[0]"


async def test_preemption_names_the_nominated_node_and_the_victims() -> None:
    nodes = [node_json("big", alloc={"cpu": "4", "pods": "10"}, labels={"kubernetes.io/hostname": "big"})]
    ex = await run([pod("low", "3500m", "big"), pod("high", "2", priority=1000)], "ns/high", nodes)
    assert ex.node is None and ex.preemption is not None
    assert ex.preemption.nominated_node == "big" and ex.preemption.victims == ["ns/low"]


async def test_a_bound_pod_is_explained_as_if_pending() -> None:
    ex = await run([pod("p", "1", "small")], "ns/p")
    assert ex.bound_to == "small" and ex.node is not None


async def test_a_pod_that_is_not_there_names_what_is() -> None:
    with pytest.raises(ExplainError, match=r"no pod ns/q in the cluster \(2 pods\); pending pods: ns/p"):
        await run([pod("p", "1"), pod("b", "1", "big")], "ns/q")
    with pytest.raises(ExplainError, match=r"pods of that name: ns/p"):
        await run([pod("p", "1")], "other/p")


async def test_other_pending_pods_wait_and_are_noted() -> None:
    ex = await run([pod("first", "1"), pod("p", "1")], "ns/p")
    assert ex.node is not None and any("1 other pending pod" in n for n in ex.notes)


async def test_a_gated_pod_says_why_it_was_not_attempted() -> None:
    ex = await run([pod("p", "1", schedulingGates=[{"name": "wait"}])], "ns/p")
    assert ex.node is None and ex.message == "waiting for scheduling gates: [wait]" and ex.nodes == []


async def test_the_sample_kube_scheduler_scores_is_marked() -> None:
    many = [node_json(f"n{i:03}", alloc={"cpu": "4", "pods": "10"}) for i in range(300)]
    got = decode_snapshot({"nodes": many, "pods": [pod("p", "1")]})
    ex = await explain(build_default, Objects(got.nodes, got.pods), "ns/p", "v1.37.2")
    assert ex.sample is not None and ex.sample.feasible == 300
    assert ex.sample.nodes_to_find == sum(n.scored for n in ex.nodes) < 300  # adaptive percentage
    assert all(n.feasible for n in ex.nodes) and all(n.total is None for n in ex.nodes if not n.scored)
    assert by_name(ex)[ex.node].scored


def test_the_json_schema_has_the_documented_fields() -> None:
    import asyncio

    ex = asyncio.run(run([FILLER, pod("p", "2")], "ns/p"))
    doc = msgspec.json.decode(msgspec.json.encode(ex))
    assert doc["apiVersion"] == "kubesched.io/v1alpha1" and doc["kind"] == "Explanation"
    assert {"pod", "node", "message", "kubernetesVersion", "nodes", "help"} <= doc.keys() and doc["node"] is None
    node = next(n for n in doc["nodes"] if n["name"] == "tiny-tainted")
    assert node["feasible"] is False and {"plugin", "code", "reason"} <= node["failed"][0].keys()
    assert node["reported"]["code"] == "UnschedulableAndUnresolvable"
    fits = asyncio.run(run([pod("p", "1")], "ns/p"))
    scored = msgspec.json.decode(msgspec.json.encode(fits))["nodes"]
    assert {"raw", "normalized", "weighted"} <= next(n for n in scored if n.get("scores"))["scores"][0].keys()


def test_the_explain_decider_answers_as_the_memory_decider() -> None:
    snapshot = {"nodes": NODES, "pods": [FILLER, pod("p", "2")]}
    old, new = snapshot_decider({"percentageOfNodesToScore": 100}), explain_decider({"percentageOfNodesToScore": 100})
    assert new("default-scheduler", snapshot) == old("default-scheduler", snapshot)


async def test_a_nomination_the_api_holds_counts_on_its_node() -> None:
    # As kube-scheduler's queue.Add: a pending pod nominated by an earlier preemption keeps its room.
    nodes = [node_json("big", alloc={"cpu": "4", "pods": "10"})]
    nominated = pod("first", "3", priority=1000) | {"status": {"nominatedNodeName": "big"}}
    ex = await run([nominated, pod("p", "2")], "ns/p", nodes)
    assert ex.node is None and by_name(ex)["big"].reported.reason == "Insufficient cpu"
    alone = await run([pod("p", "2")], "ns/p", nodes)
    assert alone.node == "big"
