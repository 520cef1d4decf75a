from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.extender.app import ExtenderApp
from kubesched.extender.service import ExtenderService
from kubesched.framework.runtime import Framework
from kubesched.policies import load, registry_for
from kubesched.testing.builders import node_json, pod_json

RES = "example.com/custom-resource"


def node(name: str, *, custom: bool = True, unschedulable: bool = False, res: int | None = 4) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if custom:
        labels["custom"] = "true"
    alloc: dict[str, str] = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    if res is not None:
        alloc[RES] = str(res)
    return node_json(name, labels=labels, alloc=alloc, unschedulable=unschedulable)


def pod(need: int = 1, *, uid: str = "uid-p", name: str = "p", node_name: str = "") -> dict[str, Any]:
    requests = {"cpu": "100m", RES: str(need)} if need else {"cpu": "100m"}
    return pod_json(name, uid=uid, requests=requests, image="busybox", node_name=node_name or None)


NODES = [
    node("n-big", res=8),
    node("n-nolabel", custom=False),
    node("n-cordoned", unschedulable=True),
    node("n-empty", res=0),
    node("n-small", res=2),
]


def make_service(nodes: list[dict[str, Any]] = NODES, pods: list[dict[str, Any]] = ()) -> ExtenderService:  # type: ignore[assignment]
    policy = load("custom-label")
    framework = Framework.build(policy.profile, registry_for(policy))
    cache = ClusterCache()
    cache.replace_nodes(msgspec.convert(n, Node) for n in nodes)
    if pods:
        cache.tracks_pods = True
        cache.replace_pods(msgspec.convert(p, Pod) for p in pods)
    cache.synced.set()
    return ExtenderService(policy, framework, cache)


@pytest.fixture
def service() -> ExtenderService:
    return make_service()


@pytest.fixture
async def client(service: ExtenderService) -> AsyncIterator[httpx.AsyncClient]:
    app = ExtenderApp(service, max_body=64 * 1024)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ext") as c:
        yield c
