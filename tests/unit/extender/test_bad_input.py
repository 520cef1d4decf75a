"""Every class of bad input gets a 4xx naming the problem, and the server keeps serving."""

from __future__ import annotations

import httpx
import pytest

from .conftest import pod

GOOD = {"Pod": pod(), "Nodes": None, "NodeNames": ["n-big"]}
PREEMPT = {"Pod": pod(need=1), "NodeNameToMetaVictims": {"n-big": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 0}}}


@pytest.mark.parametrize(
    ("verb", "body", "status", "says"),
    [
        ("filter", b"{not json", 400, "not valid JSON"),
        ("filter", b"", 400, "empty request body"),
        ("filter", b"[1, 2]", 400, "invalid ExtenderArgs"),
        ("filter", b'{"Pod": null, "Nodes": null, "NodeNames": ["a"]}', 400, "Pod is missing"),
        ("filter", b'{"NodeNames": ["a"]}', 400, "Pod is missing"),
        ("filter", b'{"Pod": {}, "Nodes": null, "NodeNames": null}', 400, "both Nodes and NodeNames are null"),
        ("filter", b'{"Pod": {}, "Nodes": null, "NodeNames": 5}', 400, "$.NodeNames"),
        ("filter", b'{"Pod": {"spec": {"containers": "x"}}, "NodeNames": []}', 400, "$.Pod.spec.containers"),
        ("prioritize", b'{"Pod": {}, "Nodes": {"items": [{"metadata": 3}]}}', 400, "Nodes.items[0]"),
        ("prioritize", b'{"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}}', 400, "metadata.name is missing"),
        (
            "filter",
            b'{"Pod": {"spec": {"containers": [{"resources": {"requests": {"example.com/custom-resource": "lots"}}}]}},'
            b' "NodeNames": ["n-big"]}',
            400,
            "quantities must match",
        ),
        ("bind", b'{"PodName": "p"}', 400, "PodNamespace, Node missing"),
        ("bind", b'{"PodName": 7}', 400, "$.PodName"),
        ("preempt", b'{"Pod": null}', 400, "Pod is missing"),
        ("preempt", b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": 3}}}', 400, "NodeNameToMetaVictims"),
    ],
)
async def test_bad_bodies(client: httpx.AsyncClient, verb: str, body: bytes, status: int, says: str) -> None:
    r = await client.post(f"/{verb}", content=body)
    assert r.status_code == status, r.text
    assert says in r.text
    ok = await client.post("/filter", json=GOOD)
    assert ok.status_code == 200 and ok.json()["NodeNames"] == ["n-big"]


async def test_unknown_verb_is_404_naming_the_served_paths(client: httpx.AsyncClient) -> None:
    r = await client.post("/predicates", json=GOOD)
    assert r.status_code == 404
    assert "/filter" in r.text and "/preempt" in r.text


async def test_wrong_method_is_405(client: httpx.AsyncClient) -> None:
    r = await client.get("/filter")
    assert r.status_code == 405
    assert "POST" in r.text


async def test_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    big = b'{"Pod": {}, "NodeNames": [' + b'"n",' * 40000 + b'"n"]}'
    r = await client.post("/filter", content=big)
    assert r.status_code == 413
    assert "limit of 65536 bytes" in r.text
    ok = await client.post("/filter", json=GOOD)
    assert ok.status_code == 200


async def test_health_ready_and_metrics(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).status_code == 200
    assert (await client.get("/readyz")).text == "ok"
    await client.post("/filter", json=GOOD)
    await client.post("/filter", content=b"{")
    text = (await client.get("/metrics")).text
    assert 'kubesched_extender_requests_total{code="200",verb="filter"}' in text
    assert 'kubesched_extender_requests_total{code="400",verb="filter"}' in text
    assert "kubesched_extender_request_duration_seconds_bucket" in text
    assert "kubesched_extender_cached_nodes 5.0" in text


async def test_readyz_is_503_until_the_cache_syncs(client: httpx.AsyncClient, service) -> None:  # type: ignore[no-untyped-def]
    service.cache.synced.clear()
    r = await client.get("/readyz")
    assert r.status_code == 503
    assert "not synced" in r.text


async def test_before_the_first_sync_filter_errors_and_prioritize_is_503(client: httpx.AsyncClient, service) -> None:  # type: ignore[no-untyped-def]
    service.cache.synced.clear()
    r = await client.post("/filter", json=GOOD)
    assert r.status_code == 200
    # Never an empty success: an Error makes kube-scheduler retry the pod with backoff (SchedulerError).
    assert r.json()["NodeNames"] is None and r.json()["FailedNodes"] == {}
    assert "node cache has not synced" in r.json()["Error"]
    r = await client.post("/prioritize", json=GOOD)
    assert r.status_code == 503 and "not synced" in r.text
    # preempt must not vouch for evictions it cannot judge: an error fails kube-scheduler's preemption.
    r = await client.post("/preempt", json=PREEMPT)
    assert r.status_code == 503 and "not synced" in r.text
    service.cache.synced.set()
    r = await client.post("/preempt", json=PREEMPT)
    assert r.json() == {"NodeNameToMetaVictims": {"n-big": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 0}}}
    r = await client.post("/filter", json=GOOD)
    assert r.json()["NodeNames"] == ["n-big"] and r.json()["Error"] == ""


async def test_preempt_vetoes_nodes_the_cache_does_not_know(client: httpx.AsyncClient) -> None:
    victims = {"Pods": [{"UID": "v1"}], "NumPDBViolations": 0}
    args = {**PREEMPT, "NodeNameToMetaVictims": {"n-big": victims, "n-new": victims}}
    r = await client.post("/preempt", json=args)
    assert r.json() == {"NodeNameToMetaVictims": {"n-big": victims}}


async def test_names_the_cache_does_not_know_get_a_resolvable_reason(client: httpx.AsyncClient) -> None:
    r = await client.post("/filter", json={**GOOD, "NodeNames": ["n-big", "n-new", "n-small", "n-new", "n-gone"]})
    assert r.status_code == 200
    body = r.json()
    assert body["NodeNames"] == ["n-big", "n-small"]
    reason = "node is not in the extender's node cache (yet); the pod is retried when nodes change"
    assert body["FailedNodes"] == {"n-new": reason, "n-gone": reason}
    assert body["FailedAndUnresolvableNodes"] == {}
    r = await client.post("/prioritize", json={**GOOD, "NodeNames": ["n-big", "n-new"]})
    assert r.json() == [{"Host": "n-big", "Score": 10}]
