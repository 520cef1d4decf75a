"""`watch_resources`: resource.k8s.io/v1 is watched only once the API server says it serves it."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from kubesched.cluster.kubeclient import APIError, Connection, KubeClient, TransportError
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.source import watch_resources


class Discovery(KubeClient):
    """Discovery answers in turn (an exception to raise, or bytes); lists are empty, watches end at once."""

    def __init__(self, *answers: Exception | bytes) -> None:
        super().__init__(Connection("http://127.0.0.1:9", False))
        self.answers = list(answers)
        self.asked: list[str] = []

    async def request(self, method: str, path: str, body: Any = None, *args: Any, **kw: Any) -> bytes:
        self.asked.append(path)
        if path == "/apis/resource.k8s.io/v1":
            answer = self.answers.pop(0) if self.answers else b"{}"
            if isinstance(answer, Exception):
                raise answer
            return answer
        return msgspec.json.encode({"metadata": {"resourceVersion": "1"}, "items": []})


async def test_a_server_without_the_group_is_asked_again_and_nothing_is_watched_meanwhile() -> None:
    client = Discovery(APIError(404, "the server could not find the requested resource", "NotFound"))
    store = ResourceObjects(served=True)
    task = asyncio.create_task(watch_resources(client, store, recheck=3600))
    await asyncio.sleep(0.05)
    assert store.served is False and client.asked == ["/apis/resource.k8s.io/v1"]  # no list of an unserved API
    task.cancel()


async def test_once_served_the_three_kinds_are_listed_into_the_store() -> None:
    client = Discovery(TransportError("connection refused"), APIError(404, "not found", "NotFound"), b"{}")
    store, told = ResourceObjects(served=False), []
    store.on_change = told.append
    task = asyncio.create_task(watch_resources(client, store, recheck=0.01))
    try:
        for _ in range(400):
            if len(told) >= 3:
                break
            await asyncio.sleep(0.01)
        assert store.served is True
        assert sorted(told[:3]) == ["DeviceClass", "ResourceClaim", "ResourceSlice"]
        listed = {p for p in client.asked if p != "/apis/resource.k8s.io/v1"}
        assert {p.split("?")[0] for p in listed} >= {
            "/apis/resource.k8s.io/v1/deviceclasses",
            "/apis/resource.k8s.io/v1/resourceslices",
            "/apis/resource.k8s.io/v1/resourceclaims",
        }
    finally:
        task.cancel()
