"""APIServerWriter over a KubeClient whose transport fails: what `bind` raises, and the write fence."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import Pod
from kubesched.api.resource_v1 import AllocationResult, ResourceClaim
from kubesched.cluster.kubeclient import AnswerLost, APIError, Connection, Fenced, KubeClient, TransportError
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import BindingUnknownError, ClusterAPIError
from kubesched.scheduler.remote.apiserver import APIServerWriter


def pod_info() -> PodInfo:
    raw = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {"containers": [{"name": "c"}]}}
    return PodInfo(msgspec.convert(raw, Pod))


class Client(KubeClient):
    """A KubeClient whose requests raise ``error`` (and record what was asked)."""

    def __init__(self, error: Exception | None) -> None:
        super().__init__(Connection("http://127.0.0.1:9", False))
        self.error = error
        self.sent: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, body: Any = None, *args: Any, **kw: Any) -> bytes:
        gate = kw.get("gate")
        if gate is not None and not gate():
            raise Fenced("not sent")
        self.sent.append((method, path))
        if self.error is not None:
            raise self.error
        return b"{}"


async def test_a_binding_whose_answer_was_lost_raises_binding_unknown() -> None:
    backend = APIServerWriter(Client(AnswerLost("POST .../binding: no answer within 15s")), hostname="h")
    with pytest.raises(BindingUnknownError, match="answer was lost"):
        await backend.bind(pod_info(), "node-a")


@pytest.mark.parametrize("error", [TransportError("connection refused"), APIError(409, "conflict", "Conflict")])
async def test_other_failures_stay_plain_cluster_api_errors(error: Exception) -> None:
    backend = APIServerWriter(Client(error), hostname="h")
    with pytest.raises(ClusterAPIError) as info:
        await backend.bind(pod_info(), "node-a")
    assert not isinstance(info.value, BindingUnknownError)


async def test_no_binding_is_sent_once_the_gate_closes() -> None:
    client = Client(None)
    allowed = [True]
    backend = APIServerWriter(client, hostname="h", gate=lambda: allowed[0])
    await backend.bind(pod_info(), "node-a")
    allowed[0] = False
    with pytest.raises(ClusterAPIError):
        await backend.bind(pod_info(), "node-a")
    assert [m for m, _ in client.sent] == ["POST"]


# ---- DynamicResources' PreBind write ---------------------------------------------------------------------


def claim_json(rv: str, *, allocated: bool = False, deleting: bool = False, finalizer: bool = False) -> bytes:
    meta: dict[str, Any] = {"name": "c", "namespace": "ns", "uid": "cu", "resourceVersion": rv}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if finalizer:
        meta["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    status = {"allocation": {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "x"}]}}}
    return msgspec.json.encode({"metadata": meta, "status": status if allocated else {}})


class Scripted(KubeClient):
    """Answers in turn: bytes, or an exception to raise; records (method, path, body)."""

    def __init__(self, *answers: bytes | Exception) -> None:
        super().__init__(Connection("http://127.0.0.1:9", False))
        self.answers = list(answers)
        self.sent: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, body: Any = None, *args: Any, **kw: Any) -> bytes:
        self.sent.append((method, path, body))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def allocation() -> AllocationResult:
    return msgspec.convert(
        {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "x"}]}}, AllocationResult
    )


async def test_a_claim_is_reserved_with_its_finalizer_then_its_status_guarded_by_resource_version() -> None:
    client = Scripted(claim_json("2", finalizer=True), claim_json("3", allocated=True, finalizer=True))
    got = await APIServerWriter(client, hostname="h").reserve_claim(
        msgspec.json.decode(claim_json("1"), type=ResourceClaim), allocation(), pod_info()
    )
    assert got.metadata.resource_version == "3"
    (m1, p1, b1), (m2, p2, b2) = client.sent
    path = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c"
    assert (m1, p1, m2, p2) == ("PATCH", path, "PATCH", path + "/status")
    assert b1["metadata"] == {"resourceVersion": "1", "finalizers": ["resource.kubernetes.io/delete-protection"]}
    assert b2["metadata"] == {"resourceVersion": "2"}
    assert b2["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "u1"}]
    assert b2["status"]["allocation"]["devices"]["results"][0]["device"] == "x"


async def test_a_conflict_rereads_the_claim_and_tries_again() -> None:
    conflict = APIError(409, "the object has been modified", "Conflict")
    client = Scripted(conflict, claim_json("5", finalizer=True), claim_json("6", allocated=True, finalizer=True))
    claim = msgspec.json.decode(claim_json("1", finalizer=True), type=ResourceClaim)
    got = await APIServerWriter(client, hostname="h").reserve_claim(claim, allocation(), pod_info())
    assert got.metadata.resource_version == "6"
    assert [m for m, _, _ in client.sent] == ["PATCH", "GET", "PATCH"]
    assert client.sent[2][2]["metadata"] == {"resourceVersion": "5"}


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (
            (APIError(409, "x", "Conflict"), claim_json("5", allocated=True)),
            "claim ns/c got allocated elsewhere in the meantime",
        ),
        ((APIError(409, "x", "Conflict"), claim_json("5", deleting=True)), "claim ns/c got deleted in the meantime"),
        ((TransportError("connection reset by peer"),), "TransportError: connection reset by peer"),
        (
            (APIError(422, 'ResourceClaim.resource.k8s.io "c" is invalid'),),
            'ResourceClaim.resource.k8s.io "c" is invalid',
        ),
        (
            tuple(APIError(409, "x", "Conflict") if i % 2 == 0 else claim_json("5", finalizer=True) for i in range(9)),
            "the object kept changing (5 conflicts)",
        ),
    ],
)
async def test_failed_claim_writes_are_cluster_errors_naming_why(answers: tuple[Any, ...], message: str) -> None:
    claim = msgspec.json.decode(claim_json("1", finalizer=True), type=ResourceClaim)
    with pytest.raises(ClusterAPIError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await APIServerWriter(Scripted(*answers), hostname="h").reserve_claim(claim, allocation(), pod_info())
