"""The lean HTTP/1.1 server over real sockets: keep-alive, pipelining, chunked bodies, 100-continue,
body limits, malformed requests — and that it keeps serving after each."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from kubesched.extender.app import Dispatcher
from kubesched.http.server import HTTPServer
from kubesched.testing.waiting import until
from tests.unit.extender.conftest import make_service, pod

GOOD = json.dumps({"Pod": pod(), "Nodes": None, "NodeNames": ["n-big", "n-empty"]}).encode()


@pytest.fixture
async def server() -> AsyncIterator[HTTPServer]:
    srv = HTTPServer(Dispatcher(make_service(), max_body=4096), "127.0.0.1", 0)
    await srv.start()
    yield srv
    await srv.shutdown(grace=1)


async def exchange(port: int, raw: bytes, responses: int = 1) -> list[tuple[int, bytes]]:
    """Send raw bytes, read ``responses`` HTTP responses (status, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    out = []
    for _ in range(responses):
        status_line = await reader.readline()
        if not status_line:
            break
        headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            k, _, v = line.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        body = await reader.readexactly(int(headers["content-length"]))
        out.append((int(status_line.split()[1]), body))
    writer.close()
    return out


def post(body: bytes, path: str = "/filter", extra: bytes = b"") -> bytes:
    return b"POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s" % (path.encode(), extra, len(body), body)


async def test_keep_alive_and_pipelined_requests_answer_in_order(server: HTTPServer) -> None:
    raw = post(GOOD) + post(GOOD, "/prioritize") + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    answers = await exchange(server.bound_port, raw, 3)
    assert [a[0] for a in answers] == [200, 200, 200]
    assert json.loads(answers[0][1])["NodeNames"] == ["n-big"]
    assert json.loads(answers[1][1]) == [{"Host": "n-big", "Score": 10}, {"Host": "n-empty", "Score": 0}]
    assert answers[2][1] == b"ok"


async def test_bind_in_flight_keeps_later_answers_behind_it(server: HTTPServer) -> None:
    bind = json.dumps({"PodName": "p", "PodNamespace": "d", "PodUID": "u", "Node": "n-big"}).encode()
    answers = await exchange(server.bound_port, post(bind, "/bind") + post(GOOD), 2)
    assert "no cluster connection" in json.loads(answers[0][1])["Error"]
    assert json.loads(answers[1][1])["NodeNames"] == ["n-big"]


async def test_chunked_body_and_expect_continue(server: HTTPServer) -> None:
    half = len(GOOD) // 2
    chunked = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, GOOD[:half], len(GOOD) - half, GOOD[half:])
    raw = b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked
    assert (await exchange(server.bound_port, raw))[0][0] == 200
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    writer.write(b"POST /filter HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(GOOD))
    assert await reader.readline() == b"HTTP/1.1 100 Continue\r\n"
    await reader.readline()
    writer.write(GOOD)
    assert (await reader.readline()).startswith(b"HTTP/1.1 200")
    writer.close()


async def test_limits_and_malformed_requests_then_keeps_serving(server: HTTPServer) -> None:
    port = server.bound_port
    too_big = await exchange(port, b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 99999\r\n\r\n")
    assert too_big[0][0] == 413 and b"limit of 4096 bytes" in too_big[0][1]
    chunks = b"".join(b"400\r\n" + b"x" * 1024 + b"\r\n" for _ in range(6)) + b"0\r\n\r\n"
    streamed = await exchange(port, b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
    assert streamed[0][0] == 413
    garbage = await exchange(port, b"NOT HTTP AT ALL\r\n\r\n")
    assert garbage[0][0] == 400 and b"malformed HTTP request" in garbage[0][1]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        assert (await client.post("/filter", content=GOOD)).status_code == 200
        assert (await client.post("/filter", content=b"{")).status_code == 400
        assert (await client.get("/metrics")).status_code == 200


async def test_shutdown_waits_for_requests_in_flight() -> None:
    srv = HTTPServer(Dispatcher(make_service()), "127.0.0.1", 0)
    await srv.start()
    port = srv.bound_port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post(GOOD)[:-5])  # a request half sent
    await writer.drain()
    await until(lambda: any(not c.idle for c in srv.connections), "the server reading the request")
    stopping = asyncio.create_task(srv.shutdown(grace=5))

    async def refused() -> bool:
        try:
            _, probe = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return True
        probe.close()
        return False

    await until(refused, "the listener closed")
    assert not stopping.done()  # shutting down (no new connections), and waiting for the request in flight
    writer.write(post(GOOD)[-5:])
    await writer.drain()
    assert (await reader.readline()).startswith(b"HTTP/1.1 200")
    await asyncio.wait_for(stopping, 5)
    writer.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)
