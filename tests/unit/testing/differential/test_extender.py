"""The pass-through extender: passes every node, records kube-scheduler's first call per pod, refuses junk."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from kubesched.testing.differential.extender import PassThroughExtender


@pytest.fixture(params=[True, False], ids=["names", "nodes"])
def extender(request: pytest.FixtureRequest) -> Iterator[PassThroughExtender]:
    with PassThroughExtender(node_cache_capable=request.param) as ext:
        yield ext


def args(ext: PassThroughExtender, uid: str, names: list[str]) -> dict[str, object]:
    pod = {"metadata": {"name": "p", "uid": uid}}
    if ext.node_cache_capable:
        return {"Pod": pod, "NodeNames": names}  # Go decodes case-insensitively; so does the extender
    return {"pod": pod, "nodes": {"items": [{"metadata": {"name": n}} for n in names]}}


def test_every_node_passes_and_the_first_call_per_pod_is_recorded(extender: PassThroughExtender) -> None:
    url = extender.config()["urlPrefix"] + "/filter"
    with httpx.Client(trust_env=False) as client:  # one connection, kept alive across the calls
        first = client.post(url, json=args(extender, "u1", ["a", "b"])).json()
        client.post(url, json=args(extender, "u1", ["b"]))  # a retry (the nominated node): not the feasible set
        client.post(url, json=args(extender, "u2", []))
    if extender.node_cache_capable:
        assert first["nodenames"] == ["a", "b"]
    else:
        assert [n["metadata"]["name"] for n in first["nodes"]["items"]] == ["a", "b"]
    assert first["failedNodes"] == {} and first["error"] == ""
    assert extender.feasible("u1") == ["a", "b"] and extender.feasible("u2") == [] and extender.feasible("u3") is None
    assert extender.calls == 3


def test_junk_gets_a_4xx_and_the_extender_keeps_serving(extender: PassThroughExtender) -> None:
    base = extender.config()["urlPrefix"]
    with httpx.Client(trust_env=False) as client:
        bad = client.post(f"{base}/filter", content=b"{not json")
        assert bad.status_code == 400 and "ExtenderArgs" in bad.json()["error"]
        assert client.post(f"{base}/filter", content=b"[1, 2]").status_code == 400
        assert client.post(f"{base}/prioritize", json={}).status_code == 404
        assert client.get(f"{base}/filter").status_code == 404
    with socket.create_connection(("127.0.0.1", extender.port)) as raw:  # cut mid-body
        raw.sendall(b"POST /filter HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
    with socket.create_connection(("127.0.0.1", extender.port)) as raw:
        raw.sendall(b"POST /filter HTTP/1.1\r\nContent-Length: nope\r\n\r\n")
        assert raw.recv(100) == b""  # closed, not crashed
    ok = httpx.post(f"{base}/filter", json=args(extender, "u9", ["z"]), trust_env=False)
    assert ok.status_code == 200 and extender.feasible("u9") == ["z"]
