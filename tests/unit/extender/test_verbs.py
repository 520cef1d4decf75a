"""filter, prioritize, bind and preempt of the custom-label policy, in both node modes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec

from kubesched.api.core import Node

from .conftest import NODES, make_service, node, pod

NAMES = [n["metadata"]["name"] for n in NODES]


def names_args(p: dict[str, Any], names: list[str] = NAMES) -> dict[str, Any]:
    return {"Pod": p, "Nodes": None, "NodeNames": names}


def full_args(p: dict[str, Any], nodes: list[dict[str, Any]] = NODES) -> dict[str, Any]:
    return {"Pod": p, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None}


EXPECTED_FAILED = {"n-empty": "Insufficient example.com/custom-resource"}
EXPECTED_UNRESOLVABLE = {
    "n-nolabel": "node(s) didn't have label custom",
    "n-cordoned": "node(s) were unschedulable",
}


async def test_filter_names_mode(client: httpx.AsyncClient) -> None:
    r = await client.post("/filter", json=names_args(pod(need=1)))
    assert r.status_code == 200
    assert r.json() == {
        "Nodes": None,
        "NodeNames": ["n-big", "n-small"],
        "FailedNodes": EXPECTED_FAILED,
        "FailedAndUnresolvableNodes": EXPECTED_UNRESOLVABLE,
        "Error": "",
    }


async def test_filter_names_mode_need_more_than_small(client: httpx.AsyncClient) -> None:
    r = await client.post("/filter", json=names_args(pod(need=3)))
    body = r.json()
    assert body["NodeNames"] == ["n-big"]
    assert body["FailedNodes"] == {
        "n-empty": "Insufficient example.com/custom-resource",
        "n-small": "Insufficient example.com/custom-resource",
    }


async def test_filter_full_mode_echoes_the_node_objects_unchanged(client: httpx.AsyncClient) -> None:
    nodes = [dict(n, extra={"kept": [1, 2, {"deep": None}]}) for n in NODES]
    r = await client.post("/filter", content=json.dumps(full_args(pod(need=1), nodes)))
    body = r.json()
    assert body["NodeNames"] is None
    assert body["Nodes"]["items"] == [nodes[0], nodes[4]]
    assert body["FailedNodes"] == EXPECTED_FAILED
    assert body["FailedAndUnresolvableNodes"] == EXPECTED_UNRESOLVABLE


async def test_filter_names_unknown_to_the_cache_fail_with_a_reason(client: httpx.AsyncClient) -> None:
    r = await client.post("/filter", json=names_args(pod(need=0), ["ghost", "n-big"]))
    body = r.json()
    assert body["NodeNames"] == ["n-big"]
    assert "not in the extender's node cache" in body["FailedNodes"]["ghost"]
    assert "ghost" not in body["FailedAndUnresolvableNodes"]


async def test_filter_accepts_keys_in_any_case(client: httpx.AsyncClient) -> None:
    r = await client.post("/filter", json={"pod": pod(need=1), "nodes": None, "nodenames": ["n-big", "n-empty"]})
    assert r.status_code == 200
    assert r.json()["NodeNames"] == ["n-big"]


async def test_filter_counts_usage_of_known_pods() -> None:
    # n-big has 8; pods already bound there use 7, so a pod needing 2 only fits on n-small.
    svc = make_service(pods=[pod(need=7, uid="u-used", name="used", node_name="n-big")])
    out = json.loads(svc.filter(json.dumps(names_args(pod(need=2))).encode()))
    assert out["NodeNames"] == ["n-small"]
    assert out["FailedNodes"]["n-big"] == "Insufficient example.com/custom-resource"


async def test_prioritize_scores_ten_times_share_of_largest(client: httpx.AsyncClient) -> None:
    r = await client.post("/prioritize", json=names_args(pod(), ["n-big", "n-small", "n-empty"]))
    assert r.status_code == 200
    assert r.json() == [
        {"Host": "n-big", "Score": 10},
        {"Host": "n-small", "Score": 2},
        {"Host": "n-empty", "Score": 0},
    ]


async def test_prioritize_full_mode_and_floor(client: httpx.AsyncClient) -> None:
    nodes = [node("a", res=3), node("b", res=2), node("c", res=1)]
    r = await client.post("/prioritize", json=full_args(pod(), nodes))
    # floor(10 * 2 / 3) = 6, floor(10 * 1 / 3) = 3
    assert r.json() == [{"Host": "a", "Score": 10}, {"Host": "b", "Score": 6}, {"Host": "c", "Score": 3}]


async def test_prioritize_all_zero_when_no_node_has_the_resource(client: httpx.AsyncClient) -> None:
    nodes = [node("a", res=None), node("b", res=0)]
    r = await client.post("/prioritize", json=full_args(pod(), nodes))
    assert r.json() == [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 0}]


async def test_bind_without_cluster_connection_answers_an_error(client: httpx.AsyncClient) -> None:
    r = await client.post("/bind", json={"PodName": "p", "PodNamespace": "default", "PodUID": "u", "Node": "n-big"})
    assert r.status_code == 200
    assert "no cluster connection" in r.json()["Error"]


async def test_preempt_vetoes_nodes_the_policy_rejects_and_answers_meta_form() -> None:
    svc = make_service(
        pods=[
            pod(need=8, uid="v1", name="v1", node_name="n-big"),
            pod(need=0, uid="v2", name="v2", node_name="n-nolabel"),
        ]
    )
    args = {
        "Pod": pod(need=4),
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {
            "n-big": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 1},
            "n-nolabel": {"Pods": [{"UID": "v2"}], "NumPDBViolations": 0},
        },
    }
    out = json.loads(svc.preempt(json.dumps(args).encode()))
    # n-nolabel can never take the pod (no `custom` label), whatever is evicted.
    assert out == {"NodeNameToMetaVictims": {"n-big": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 1}}}


async def test_preempt_full_victims_are_answered_with_uids_only(client: httpx.AsyncClient) -> None:
    args = {
        "Pod": pod(need=1),
        "NodeNameToVictims": {"n-big": {"Pods": [pod(uid="v9", name="v9", node_name="n-big")], "NumPDBViolations": 0}},
        "NodeNameToMetaVictims": None,
    }
    r = await client.post("/preempt", json=args)
    assert r.json() == {"NodeNameToMetaVictims": {"n-big": {"Pods": [{"UID": "v9"}], "NumPDBViolations": 0}}}


def test_compact_and_spaced_name_lists_answer_alike() -> None:
    svc = make_service()
    args = names_args(pod(need=1), [*NAMES, "ghost"])
    compact = json.dumps(args, separators=(",", ":")).encode()
    spaced = json.dumps(args, indent=2).encode()
    assert json.loads(svc.filter(compact)) == json.loads(svc.filter(spaced))
    assert json.loads(svc.prioritize(compact)) == json.loads(svc.prioritize(spaced))


def test_policy_preempt_hook_trims_and_vetoes() -> None:
    import dataclasses

    svc = make_service()
    seen: list[tuple[str, list[str]]] = []

    def hook(pod_info: object, node_name: str, uids: list[str]) -> list[str] | None:
        seen.append((node_name, uids))
        return None if node_name == "n-small" else [u for u in uids if u != "protected"]

    svc.policy = dataclasses.replace(svc.policy, preempt=hook)
    args = {
        "Pod": pod(need=1),
        "NodeNameToMetaVictims": {
            "n-big": {"Pods": [{"UID": "protected"}, {"UID": "v1"}], "NumPDBViolations": 0},
            "n-small": {"Pods": [{"UID": "v2"}], "NumPDBViolations": 0},
        },
    }
    out = json.loads(svc.preempt(json.dumps(args).encode()))
    assert out == {"NodeNameToMetaVictims": {"n-big": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 0}}}
    assert seen == [("n-big", ["protected", "v1"]), ("n-small", ["v2"])]


def test_the_same_candidates_again_reuse_their_rows_until_the_nodes_change() -> None:
    svc = make_service()
    body = json.dumps(names_args(pod(need=1), [*NAMES, "late"])).encode()
    first = json.loads(svc.filter(body))
    assert json.loads(svc.filter(body)) == first and "late" not in (first["NodeNames"] or [])
    svc.cache.upsert_node(msgspec.convert(node("late"), Node))  # a node joins: the names map anew
    assert "late" in json.loads(svc.filter(body))["NodeNames"]
