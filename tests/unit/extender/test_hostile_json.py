"""Deeply nested JSON, long strings and bodies at the size limit, over the lean server and ASGI:
a 400 naming the problem, never a 500, and the server keeps serving."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from kubesched.api.nesting import deeper_than, depth
from kubesched.extender.app import Dispatcher
from kubesched.http.server import HTTPServer

from .conftest import make_service, pod

GOOD = {"Pod": pod(), "Nodes": None, "NodeNames": ["n-big", "n-empty"]}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    srv = HTTPServer(Dispatcher(make_service(), max_body=4 * 1024 * 1024), "127.0.0.1", 0)
    await srv.start()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{srv.bound_port}") as c:
        yield c
    await srv.shutdown(grace=1)


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def unknown_field(levels: int) -> bytes:
    p = pod()
    p["metadata"]["zzz"] = "X"
    return json.dumps({**GOOD, "Pod": p}).replace('"X"', nested(levels)).encode()


def known_field(levels: int) -> bytes:
    return json.dumps({**GOOD, "NodeNames": "X"}).replace('"X"', nested(levels)).encode()


def full_node_item(levels: int) -> bytes:
    items = [{"metadata": {"name": "a", "labels": {"custom": "true"}, "zzz": "X"}}]
    return (
        json.dumps({"Pod": pod(), "Nodes": {"items": items}, "NodeNames": None}).replace('"X"', nested(levels)).encode()
    )


async def assert_still_serving(client: httpx.AsyncClient) -> None:
    r = await client.post("/filter", json=GOOD)
    assert r.status_code == 200 and r.json()["NodeNames"] == ["n-big"]


@pytest.mark.parametrize("levels", [1000, 100_000])
@pytest.mark.parametrize("build", [unknown_field, known_field, full_node_item])
@pytest.mark.parametrize("verb", ["filter", "prioritize", "preempt"])
async def test_deep_nesting_is_400_naming_the_depth(
    client: httpx.AsyncClient, levels: int, build: object, verb: str
) -> None:
    body = build(levels)  # type: ignore[operator]
    r = await client.post(f"/{verb}", content=body)
    assert r.status_code == 400, r.text
    if build is known_field and verb != "preempt":
        assert "Expected `str`, got `array` - at `$.NodeNames[0]`" in r.text  # typed: rejected at the first level
    else:
        assert depth(body) > levels  # the envelope adds a few
        assert f"JSON nested {depth(body)} levels deep, deeper than the decoder's limit" in r.text, r.text
    await assert_still_serving(client)


async def test_a_few_hundred_levels_in_an_unknown_field_are_skipped(client: httpx.AsyncClient) -> None:
    # kube-scheduler's Go decoder reads these too; the extender never looks at them.
    r = await client.post("/filter", content=unknown_field(300))
    assert r.status_code == 200 and r.json()["NodeNames"] == ["n-big"]
    r = await client.post("/filter", content=known_field(300))
    assert r.status_code == 400 and "$.NodeNames" in r.text


async def test_long_strings_and_the_body_limit(client: httpx.AsyncClient) -> None:
    p = pod()
    p["metadata"]["name"] = "n" * 3_000_000
    r = await client.post("/filter", json={**GOOD, "Pod": p})
    assert r.status_code == 200 and r.json()["NodeNames"] == ["n-big"]
    r = await client.post("/filter", json={**GOOD, "NodeNames": ["x" * 3_000_000]})
    assert r.status_code == 200
    assert [len(name) for name in r.json()["FailedNodes"]] == [3_000_000]  # unknown to the cache: a reason
    limit = 4 * 1024 * 1024
    base = json.dumps({**GOOD, "Pod": {**pod(), "zz": ""}}).encode()
    at_limit = base.replace(b'"zz": ""', b'"zz": "' + b"a" * (limit - len(base)) + b'"')
    assert len(at_limit) == limit
    assert (await client.post("/filter", content=at_limit)).status_code == 200
    r = await client.post("/filter", content=at_limit + b" ")
    assert r.status_code == 413 and "--max-body-bytes" in r.text


def test_depth_measure() -> None:
    assert depth(b'{"a": "[[[", "b": [[{}]], "c": "\\"["}') == 4
    assert depth(b"[]" * 10 + b"[[[]]]") == 3
    assert depth(b"7") == 0
    assert not deeper_than({"a": [[1]]}, 3)
    assert deeper_than({"a": [[[]]]}, 3)
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    assert deeper_than(deep, 100)
    assert not deeper_than(deep, 5001)
