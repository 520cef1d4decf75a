"""APIServerWriter over a KubeClient whose transport fails: what `bind` raises, and the write fence."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import Pod
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
