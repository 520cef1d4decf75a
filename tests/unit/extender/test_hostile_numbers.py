"""Numbers that once froze or failed the extender: huge exponents, allocatable past int64, JSON
numbers past any range. Every answer is a 200 with sane verdicts, or a 400 naming the field."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.extender.app import ExtenderApp
from kubesched.extender.service import ExtenderService
from kubesched.framework.policy import Policy
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.plugins import in_tree
from kubesched.policies import load, registry_for

from .conftest import RES, node, pod

RESOURCES = Policy(
    name="resources",
    profile=ProfileSpec(
        plugins=(
            PluginRef("NodeResourcesFit", weight=1),
            PluginRef("NodeResourcesBalancedAllocation", weight=1),
        )
    ),
)


def _service(policy: Policy, nodes: list[dict[str, Any]]) -> ExtenderService:
    registry = registry_for(policy) if policy.plugins else in_tree()
    cache = ClusterCache()
    cache.replace_nodes(msgspec.convert(n, Node) for n in nodes)
    cache.synced.set()
    return ExtenderService(policy, Framework.build(policy.profile, registry), cache)


def _node(name: str, **alloc: str) -> dict[str, Any]:
    n = node(name)
    n["status"]["allocatable"].update({k.replace("_", "."): v for k, v in alloc.items()})
    return n


def _pod(**requests: str | int) -> dict[str, Any]:
    p = pod()
    p["spec"]["containers"][0]["resources"]["requests"] = requests
    return p


async def _post(service: ExtenderService, verb: str, body: Any) -> httpx.Response:
    app = ExtenderApp(service)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ext") as c:
        return await c.post(f"/{verb}", content=body if isinstance(body, bytes) else json.dumps(body).encode())


async def test_extended_resource_past_int64_saturates() -> None:
    nodes = [node("n-8"), node("n-1e30"), node("n-8ei"), node("n-huge")]
    nodes[0]["status"]["allocatable"][RES] = "8"
    nodes[1]["status"]["allocatable"][RES] = "1e30"
    nodes[2]["status"]["allocatable"][RES] = "8Ei"
    nodes[3]["status"]["allocatable"][RES] = "1e9999999"
    service = _service(load("custom-label"), nodes)
    names = [n["metadata"]["name"] for n in nodes]
    small = await _post(service, "filter", {"Pod": _pod(cpu="100m", **{RES: "1"}), "NodeNames": names})
    assert small.status_code == 200, small.text
    assert small.json()["NodeNames"] == names
    huge = await _post(service, "filter", {"Pod": _pod(**{RES: "1e9999999"}), "NodeNames": names})
    assert huge.status_code == 200, huge.text
    # 1e30, 8Ei and 1e9999999 all count as the same saturated amount: the pod fits there, not on "8".
    assert huge.json()["NodeNames"] == ["n-1e30", "n-8ei", "n-huge"]
    assert huge.json()["FailedNodes"] == {"n-8": f"Insufficient {RES}"}
    scores = await _post(service, "prioritize", {"Pod": _pod(**{RES: "1"}), "NodeNames": names})
    assert scores.status_code == 200, scores.text
    assert {h["Host"]: h["Score"] for h in scores.json()} == {"n-8": 0, "n-1e30": 10, "n-8ei": 10, "n-huge": 10}


async def test_cpu_and_memory_past_int64_filter_and_score() -> None:
    nodes = [_node("n-plain"), _node("n-mem", memory="8Ei"), _node("n-cpu", cpu="1e30", memory="1e9999999")]
    service = _service(RESOURCES, nodes)
    names = ["n-plain", "n-mem", "n-cpu"]
    r = await _post(service, "filter", {"Pod": _pod(cpu="1e9999999"), "NodeNames": names})
    assert r.status_code == 200, r.text
    assert r.json()["NodeNames"] == ["n-cpu"]
    rejected = r.json()["FailedNodes"] | r.json()["FailedAndUnresolvableNodes"]
    assert rejected == {"n-plain": "Insufficient cpu", "n-mem": "Insufficient cpu"}
    r = await _post(service, "filter", {"Pod": _pod(memory="9Ei"), "NodeNames": names})
    assert r.json()["NodeNames"] == ["n-mem", "n-cpu"]
    for pod_requests in ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1e9999999", "memory": "1e30"}, {"cpu": 10**30}):
        r = await _post(service, "prioritize", {"Pod": _pod(**pod_requests), "NodeNames": names})
        assert r.status_code == 200, (pod_requests, r.text)
        assert all(0 <= h["Score"] <= 10 for h in r.json()), r.json()


async def test_full_node_mode_with_huge_allocatable() -> None:
    nodes = [_node("n-plain"), _node("n-mem", memory="8Ei", cpu="9223372036854775808")]
    service = _service(RESOURCES, [])
    body = {"Pod": _pod(cpu="2"), "Nodes": {"items": nodes}, "NodeNames": None}
    r = await _post(service, "filter", body)
    assert r.status_code == 200, r.text
    assert [n["metadata"]["name"] for n in r.json()["Nodes"]["items"]] == ["n-plain", "n-mem"]
    assert (await _post(service, "prioritize", body)).status_code == 200


async def test_json_numbers_past_range_are_400_naming_the_field() -> None:
    service = _service(load("custom-label"), [node("n-big")])
    big_float = json.dumps({"Pod": pod(), "NodeNames": ["n-big"]}).replace('"100m"', "1e400").encode()
    r = await _post(service, "filter", big_float)
    assert r.status_code == 400 and "Number out of range" in r.text and "requests" in r.text, r.text
    p = pod()
    p["spec"]["priority"] = 2**70
    r = await _post(service, "filter", {"Pod": p, "NodeNames": ["n-big"]})
    # Pod.spec.priority is an int32 the API server checks; a number past int64 is still a number
    assert r.status_code == 200 and r.json()["NodeNames"] == ["n-big"], r.text
    p = pod()
    p["metadata"]["name"] = "x" * 1_000_000
    r = await _post(service, "filter", {"Pod": p, "NodeNames": ["n-big"]})
    assert r.status_code == 200 and r.json()["NodeNames"] == ["n-big"]
    assert (await _post(service, "filter", {"Pod": pod(), "NodeNames": ["n-big"]})).status_code == 200
