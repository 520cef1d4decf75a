"""The reservation ledger behind bind: concurrent binds, failed POSTs, the watch's reports, the TTL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from kubesched.api.core import Pod
from kubesched.cluster.kubeclient import AnswerLost, APIError, TransportError
from kubesched.cluster.ledger import Ledger
from kubesched.extender.app import Dispatcher
from kubesched.extender.service import ExtenderService

from .conftest import RES, make_service, pod

SMALL = "n-small"  # 2 units of the resource; n-big has 8
INSUFFICIENT = "Insufficient example.com/custom-resource"


class FakeAPI:
    """The two calls bind makes: POST pods/binding and GET pods. Each awaits, so binds interleave."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.bindings: list[tuple[str, str]] = []
        self.post_error: Callable[[], Exception] | None = None
        self.get_error: Callable[[], Exception] | None = None
        self.apply_before_error = False  # the server applies the binding, then the answer is lost

    async def request(self, method: str, path: str, body: Any = None, params: Any = None) -> bytes:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        name = path.split("/")[6]
        if method == "GET":
            if self.get_error is not None:
                raise self.get_error()
            if name not in self.pods:
                raise APIError(404, f'pods "{name}" not found', "NotFound")
            return json.dumps(self.pods[name]).encode()
        assert method == "POST" and path.endswith("/binding")
        if self.post_error is not None and not self.apply_before_error:
            raise self.post_error()
        self.bindings.append((name, body["target"]["name"]))
        if name in self.pods:
            self.pods[name]["spec"]["nodeName"] = body["target"]["name"]
        if self.post_error is not None:
            raise self.post_error()
        return b"{}"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.now


def bound_service(clock: Clock | None = None, ttl: float = 300.0) -> tuple[ExtenderService, FakeAPI]:
    svc = make_service()
    api = FakeAPI()
    svc.cache.tracks_pods = True
    ledger = Ledger(svc.cache, ttl=ttl, clock=clock or Clock())
    return ExtenderService(svc.policy, svc.framework, svc.cache, api, ledger), api  # type: ignore[arg-type]


def filter_(svc: ExtenderService, p: dict[str, Any], names: list[str] = [SMALL]) -> dict[str, Any]:  # noqa: B006
    out: dict[str, Any] = json.loads(svc.filter(json.dumps({"Pod": p, "NodeNames": names}).encode()))
    return out


async def bind(svc: ExtenderService, p: dict[str, Any], node: str = SMALL) -> str:
    args = {"PodName": p["metadata"]["name"], "PodNamespace": "default", "PodUID": p["metadata"]["uid"], "Node": node}
    error: str = json.loads(await svc.bind(json.dumps(args).encode()))["Error"]
    return error


def burst(n: int) -> list[dict[str, Any]]:
    return [pod(1, uid=f"u{i}", name=f"p{i}") for i in range(n)]


def watch_reports(svc: ExtenderService, p: dict[str, Any], node: str) -> None:
    bound = dict(p, spec=dict(p["spec"], nodeName=node))
    svc.cache.upsert_pod(msgspec.convert(bound, Pod))


def used(svc: ExtenderService, node: str = SMALL) -> int:
    table = svc.cache.table
    return int(table.requested(RES)[table.index[node]])


async def test_concurrent_binds_on_a_node_with_two_units_give_exactly_two() -> None:
    svc, api = bound_service()
    pods = burst(6)
    for p in pods:  # kube-scheduler filtered them all before any binding was reported
        assert filter_(svc, p)["NodeNames"] == [SMALL]
    errors = await asyncio.gather(*(bind(svc, p) for p in pods))
    assert sum(e == "" for e in errors) == 2
    refused = [e for e in errors if e]
    assert len(refused) == 4 and all(INSUFFICIENT in e and "no longer fits node n-small" in e for e in refused)
    assert len(api.bindings) == 2
    assert used(svc) == 2 and svc.ledger.held == 2
    # The next pod's filter counts the reservations.
    assert filter_(svc, pod(1, uid="u9", name="p9"))["FailedNodes"] == {SMALL: INSUFFICIENT}


async def test_watch_confirmation_counts_the_pod_once_and_ends_the_reservation() -> None:
    svc, _ = bound_service()
    pods = burst(2)
    for p in pods:
        filter_(svc, p)
    assert await asyncio.gather(*(bind(svc, p) for p in pods)) == ["", ""]
    for p in pods:
        watch_reports(svc, p, SMALL)
    assert used(svc) == 2  # not 4
    assert svc.ledger.held == 0
    svc.ledger.sweep()
    assert svc.ledger.entries == {}
    # Deleted by the watch: the unit is free again.
    svc.cache.delete_pod("u0")
    assert filter_(svc, pod(1, uid="u7", name="p7"))["NodeNames"] == [SMALL]


async def test_a_pod_the_watch_reports_bound_elsewhere_moves_there() -> None:
    svc, _ = bound_service()
    p = burst(1)[0]
    filter_(svc, p)
    assert await bind(svc, p) == ""
    watch_reports(svc, p, "n-big")
    assert used(svc) == 0 and used(svc, "n-big") == 1 and svc.ledger.held == 0


@pytest.mark.parametrize(
    "error",
    [
        lambda: APIError(500, "etcdserver: request timed out", "InternalError"),
        lambda: APIError(409, "Operation cannot be fulfilled: the object has been modified", "Conflict"),
        lambda: TransportError("connection refused"),
    ],
    ids=["500", "409-other", "refused"],
)
async def test_a_failed_binding_post_releases_the_reservation(error: Callable[[], Exception]) -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    filter_(svc, p)
    api.post_error = error
    message = await bind(svc, p)
    assert message.startswith("binding pod default/p0")
    assert used(svc) == 0 and svc.ledger.entries == {} and svc.ledger.released == 1
    # Placed again once the API server takes it.
    api.post_error = None
    assert await bind(svc, p) == "" and used(svc) == 1


def already_assigned(node: str) -> Callable[[], Exception]:
    # kube-apiserver's words for a Binding of a pod that has a node.
    return lambda: APIError(
        409,
        f'Operation cannot be fulfilled on pods/binding "p0": pod p0 is already assigned to node "{node}"',
        "Conflict",
    )


async def test_a_409_already_assigned_elsewhere_counts_the_pod_on_that_node() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    filter_(svc, p)
    api.post_error = already_assigned("n-big")
    message = await bind(svc, p)
    assert "already assigned to node" in message
    assert used(svc) == 0 and used(svc, "n-big") == 1  # where the API server has it, until the watch says
    watch_reports(svc, p, "n-big")
    assert used(svc, "n-big") == 1 and svc.ledger.held == 0


async def test_a_409_already_assigned_to_the_target_node_is_success() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    filter_(svc, p)
    api.post_error = already_assigned(SMALL)
    assert await bind(svc, p) == ""
    assert used(svc) == 1 and svc.ledger.held == 1


async def test_a_lost_answer_is_read_back_from_the_api_server() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    api.pods["p0"] = json.loads(json.dumps(p))
    filter_(svc, p)
    api.post_error, api.apply_before_error = (lambda: AnswerLost("connection reset by peer")), True
    assert await bind(svc, p) == ""  # it was applied: success, and still counted
    assert used(svc) == 1 and svc.ledger.held == 1


async def test_a_lost_answer_that_cannot_be_read_back_keeps_counting_until_it_is_known() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    filter_(svc, p)
    api.post_error, api.apply_before_error = (lambda: AnswerLost("connection reset by peer")), True
    api.pods["p0"] = json.loads(json.dumps(p))
    api.get_error = lambda: TransportError("connection refused")
    assert "the answer was lost" in await bind(svc, p)
    assert used(svc) == 1  # it may be bound: keep counting it
    # kube-scheduler took it as failed and filters the pod again: the reservation stays (it may be bound).
    filter_(svc, p)
    assert used(svc) == 1
    # Its next bind, elsewhere, asks the API server first: still unreachable → an error, nothing sent.
    posts = len(api.bindings)
    assert "still unknown" in await bind(svc, p, node="n-big")
    assert len(api.bindings) == posts and used(svc) == 1
    # Reachable again: the pod is bound on the small node (the first POST was applied): counted there,
    # and the bind elsewhere fails without a second POST.
    api.get_error = api.post_error = None
    assert "already bound to node n-small" in await bind(svc, p, node="n-big")
    assert len(api.bindings) == posts and used(svc) == 1 and used(svc, "n-big") == 0


async def test_a_lost_answer_read_back_later_as_unbound_binds_normally() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    api.pods["p0"] = json.loads(json.dumps(p))
    filter_(svc, p)
    api.post_error = lambda: AnswerLost("connection reset by peer")  # not applied
    api.get_error = lambda: TransportError("connection refused")
    assert "the answer was lost" in await bind(svc, p)
    assert used(svc) == 1
    api.get_error = api.post_error = None
    assert await bind(svc, p, node="n-big") == ""  # read back: unbound, so it is bound where asked
    assert used(svc) == 0 and used(svc, "n-big") == 1 and api.bindings[-1] == ("p0", "n-big")


async def test_a_lost_answer_for_an_unbound_pod_releases() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    api.pods["p0"] = json.loads(json.dumps(p))
    filter_(svc, p)
    api.post_error = lambda: AnswerLost("server disconnected")
    assert "the answer was lost" in await bind(svc, p)
    assert used(svc) == 0 and svc.ledger.released == 1


async def test_the_ttl_releases_a_reservation_the_watch_never_reports() -> None:
    clock = Clock()
    svc, _ = bound_service(clock, ttl=30)
    pods = burst(3)
    for p in pods[:2]:
        filter_(svc, p)
        assert await bind(svc, p) == ""
    clock.now += 29
    assert filter_(svc, pods[2])["FailedNodes"] == {SMALL: INSUFFICIENT}
    clock.now += 2
    assert filter_(svc, pods[2])["NodeNames"] == [SMALL]
    assert svc.ledger.expired == 2 and svc.ledger.held == 0


async def test_an_empty_ledger_costs_filter_no_clock_read() -> None:
    clock = Clock()
    svc, _ = bound_service(clock)
    for i in range(50):
        filter_(svc, pod(1, uid=f"x{i}", name=f"x{i}"))
    assert clock.calls == 0


async def test_bind_without_a_prior_filter_reads_the_pod() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    api.pods["p0"] = json.loads(json.dumps(p))
    assert await bind(svc, p) == "" and used(svc) == 1
    other = pod(1, uid="other", name="gone")
    assert "cannot read the pod" in await bind(svc, other)
    api.pods["gone"] = pod(1, uid="new-uid", name="gone")
    assert "the pod was replaced" in await bind(svc, other)


async def test_a_bind_to_a_node_the_policy_rejects_is_refused() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    filter_(svc, p)
    assert "didn't have label custom" in await bind(svc, p, "n-nolabel")
    assert "not in the extender's node cache" in await bind(svc, p, "nowhere")
    assert api.bindings == [] and svc.ledger.refused == 2


async def test_metrics_show_reservations_and_allocation() -> None:
    svc, _ = bound_service()
    d = Dispatcher(svc)
    p = burst(1)[0]
    filter_(svc, p)
    assert await bind(svc, p) == ""
    text = d.dispatch("GET", "/metrics", b"")
    assert isinstance(text, tuple)
    body = text[1].decode()
    assert "kubesched_extender_reservations_held 1.0" in body
    assert "kubesched_extender_reservations_total 1.0" in body
    labels = f'node="{SMALL}",resource="{RES}",unit="integer"'
    assert f"kubesched_extender_node_resource_requested{{{labels}}} 1.0" in body
    assert f"kubesched_extender_node_resource_allocatable{{{labels}}} 2.0" in body


async def test_a_bind_cancelled_mid_post_keeps_counting_with_a_ttl() -> None:
    clock = Clock()
    svc, api = bound_service(clock, ttl=30)
    p = burst(1)[0]
    filter_(svc, p)
    gate = asyncio.Event()
    original = api.request

    async def hanging(method: str, path: str, body: Any = None, params: Any = None) -> bytes:
        if method == "POST":
            await gate.wait()  # the connection closes (kube-scheduler gave up) before the answer
        return await original(method, path, body, params)

    api.request = hanging  # type: ignore[method-assign]
    task = asyncio.ensure_future(bind(svc, p))
    for _ in range(10):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    entry = svc.ledger.entries["u0"]
    assert entry.unknown and entry.deadline is not None  # counted, and not for ever
    assert used(svc) == 1
    clock.now += 31
    svc.ledger.sweep()
    assert used(svc) == 0 and svc.ledger.entries == {}


async def test_the_read_back_ignores_another_pod_of_the_same_name() -> None:
    svc, api = bound_service()
    p = burst(1)[0]
    replaced = json.loads(json.dumps(p))
    replaced["metadata"]["uid"] = "someone-else"
    replaced["spec"]["nodeName"] = SMALL
    api.pods["p0"] = replaced  # the pod we bound is gone; a new one of its name sits on the node
    filter_(svc, p)
    api.post_error = lambda: AnswerLost("connection reset by peer")
    assert "the answer was lost" in await bind(svc, p)
    assert used(svc) == 0 and svc.ledger.entries == {}  # ours is not bound: released, not "confirmed"
