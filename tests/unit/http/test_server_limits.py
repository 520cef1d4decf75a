"""The lean server's limits: header size, read and idle timeouts, the connection cap, HEAD."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from kubesched.extender.app import Dispatcher
from kubesched.http.server import HTTPServer, Limits
from kubesched.testing.waiting import until
from tests.unit.extender.conftest import make_service, pod

from .test_server import exchange, post

GOOD = json.dumps({"Pod": pod(), "Nodes": None, "NodeNames": ["n-big", "n-empty"]}).encode()
LIMITS = Limits(max_header_bytes=64 * 1024, header_timeout=0.5, body_timeout=0.5, idle_timeout=0.8, max_connections=4)


@pytest.fixture
async def server() -> AsyncIterator[HTTPServer]:
    srv = HTTPServer(Dispatcher(make_service(), max_body=1 << 20), "127.0.0.1", 0, limits=LIMITS)
    await srv.start()
    yield srv
    await srv.shutdown(grace=1)


@pytest.fixture
async def patient() -> AsyncIterator[HTTPServer]:
    """The same header limit, with timeouts long enough that only the limit can end a connection."""
    limits = Limits(max_header_bytes=64 * 1024, header_timeout=10, body_timeout=10, idle_timeout=10)
    srv = HTTPServer(Dispatcher(make_service(), max_body=1 << 20), "127.0.0.1", 0, limits=limits)
    await srv.start()
    yield srv
    await srv.shutdown(grace=1)


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """What the server sent before closing (fails if it does not close in time)."""
    return await asyncio.wait_for(reader.read(), seconds)


async def test_head_sends_no_body_and_the_next_reply_is_intact(server: HTTPServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    writer.write(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + post(GOOD))
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"content-length: 2" in head
    second = await reader.readuntil(b"\r\n\r\n")
    assert second.startswith(b"HTTP/1.1 200"), second  # not "ok" glued in front of it
    length = int(second.split(b"content-length: ")[1].split(b"\r\n")[0])
    assert json.loads(await reader.readexactly(length))["NodeNames"] == ["n-big"]
    writer.close()


async def test_header_over_the_limit_is_431_and_closed(server: HTTPServer) -> None:
    raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (65 * 1024) + b"\r\n\r\n"
    answers = await exchange(server.bound_port, raw)
    assert answers[0][0] == 431 and b"--max-header-bytes" in answers[0][1]
    assert (await exchange(server.bound_port, post(GOOD)))[0][0] == 200


async def test_a_header_that_never_ends_is_cut_off_at_the_limit(patient: HTTPServer) -> None:
    # httptools hands a header over only when it is complete: a header that never ends must be
    # counted as it arrives, not when the timer closes the connection.
    reader, writer = await asyncio.open_connection("127.0.0.1", patient.bound_port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (128 * 1024))
    answer = await closed_within(reader, 5)  # well before header_timeout (10 s) could close it
    assert answer.startswith(b"HTTP/1.1 431") and b"--max-header-bytes" in answer
    writer.close()


async def test_a_huge_header_sent_slowly_does_not_stall_other_clients(patient: HTTPServer) -> None:
    server = patient
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
    answer = asyncio.ensure_future(reader.read())  # done when the server has answered and closed
    served = sent = 0
    for _ in range(40):  # 160 KiB planned, in 4 KiB pieces; the server cuts it off at the limit (64 KiB)
        if answer.done() or writer.is_closing():
            break
        try:
            writer.write(b"a" * 4096)
            await writer.drain()
        except ConnectionError:
            break
        sent += 1
        answers = await exchange(server.bound_port, post(GOOD))
        served += answers[0][0] == 200
    assert served >= 10  # the other client was answered all along
    assert sent < 40  # cut off, not buffered until the header timeout
    assert (await asyncio.wait_for(answer, 5)).startswith(b"HTTP/1.1 431")
    writer.close()


async def test_chunk_trailers_count_against_the_header_limit(patient: HTTPServer) -> None:
    # httptools buffers trailers like headers: without a bound, a chunked body's trailer of any size
    # would sit in memory until the body timeout.
    reader, writer = await asyncio.open_connection("127.0.0.1", patient.bound_port)
    writer.write(b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-T: ")
    answer = asyncio.ensure_future(reader.read())
    for _ in range(40):  # 640 KiB planned; cut off past 64 KiB
        if answer.done():
            break
        try:
            writer.write(b"a" * 16384)
            await writer.drain()
        except ConnectionError:
            break
        await asyncio.sleep(0.01)  # a slow sender is the behaviour under test
    got = await asyncio.wait_for(answer, 5)
    assert got.startswith(b"HTTP/1.1 431") and b"trailers" in got
    writer.close()


async def test_silent_and_slow_clients_are_closed(server: HTTPServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    assert await closed_within(reader, 5) == b""  # connected, sent nothing: closed after header_timeout
    writer.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    writer.write(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    assert await closed_within(reader, 5) == b""  # body never finished: closed after body_timeout
    writer.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    writer.write(post(GOOD))
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    rest = await closed_within(reader, 5)  # the body, then closed after idle_timeout
    assert json.loads(rest)["NodeNames"] == ["n-big"]
    writer.close()


async def test_connections_past_the_cap_get_503(server: HTTPServer) -> None:
    held = [await asyncio.open_connection("127.0.0.1", server.bound_port) for _ in range(LIMITS.max_connections)]
    await until(lambda: len(server.connections) == LIMITS.max_connections, "the server accepting them", within=2)
    reader, refused = await asyncio.open_connection("127.0.0.1", server.bound_port)
    answer = await closed_within(reader, 5)
    refused.close()
    assert answer.startswith(b"HTTP/1.1 503") and b"--max-connections 4" in answer
    for _, w in held:
        w.close()

    async def served() -> bool:
        answers = await exchange(server.bound_port, post(GOOD))
        return bool(answers) and answers[0][0] == 200

    await until(served, "the server accepting connections again (closed ones free their slots)", within=5)
