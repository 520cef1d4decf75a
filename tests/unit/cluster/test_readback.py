"""The one pod read-back (after a Binding's answer was lost): node, pending, gone, or cannot say."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.cluster.http1 import TransportError
from kubesched.cluster.kubeclient import APIError
from kubesched.cluster.readback import ReadBackError, bound_node


class Answers:
    """A client whose GET answers with ``answer`` (bytes) or raises it."""

    def __init__(self, answer: bytes | Exception) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> bytes:
        self.asked.append((method, path))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


POD = b'{"metadata":{"name":"p","uid":"u1","labels":{"x":"y"}},"spec":{"nodeName":"n1","containers":[{"name":"c"}]}}'


@pytest.mark.parametrize(
    ("answer", "uid", "where"),
    [
        (POD, "u1", "n1"),
        (POD, "", "n1"),  # no UID to check
        (b'{"metadata":{"uid":"u1"},"spec":{}}', "u1", ""),  # pending
        (POD, "u0", None),  # another pod of its name took its place
        (APIError(404, 'pods "p" not found', "NotFound"), "u1", None),
        # Only what is read is decoded: a field the full Pod model would refuse does not matter.
        (b'{"metadata":{"uid":"u1"},"spec":{"nodeName":"n1","priority":"high"}}', "u1", "n1"),
    ],
)
async def test_where_the_pod_is(answer: bytes | Exception, uid: str, where: str | None) -> None:
    client = Answers(answer)
    assert await bound_node(client, "ns", "p", uid) == where  # type: ignore[arg-type]
    assert client.asked == [("GET", "/api/v1/namespaces/ns/pods/p")]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (APIError(500, "etcd is down", "InternalError"), "reading ns/p: etcd is down"),
        (TransportError("connection refused"), "reading ns/p: TransportError: connection refused"),
        (b"not json", "reading ns/p: JSON is malformed"),
        (b'{"spec":{"nodeName":7}}', "reading ns/p: Expected `str`, got `int` - at `$.spec.nodeName`"),
    ],
)
async def test_when_the_server_cannot_say(answer: bytes | Exception, message: str) -> None:
    with pytest.raises(ReadBackError) as err:
        await bound_node(Answers(answer), "ns", "p", "u1")  # type: ignore[arg-type]
    assert str(err.value).startswith(message)
