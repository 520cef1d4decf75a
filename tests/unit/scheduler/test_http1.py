"""The scheduler's small HTTP/1.1 client against a local server: lengths, chunks, closes, stale keep-alives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubesched.scheduler.api import truncate_note
from kubesched.scheduler.http1 import HTTPError, Pool


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[bytes]]]:
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
            if not head:
                break
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length)
            seen.append(head.split(b"\r\n")[0] + b" " + body)
            path = head.split()[1]
            if path == b"/chunked":
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            elif path == b"/close":
                writer.write(b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
                writer.close()
                return
            elif path == b"/drop":
                writer.close()  # a kept-alive connection the server gave up on
                return
            else:
                writer.write(b"HTTP/1.1 409 Conflict\r\nContent-Length: 7\r\n\r\nnope!!!")
            await writer.drain()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield f"http://127.0.0.1:{port}", seen


async def test_lengths_chunks_and_connection_close(server: tuple[str, list[bytes]]) -> None:
    url, seen = server
    pool = Pool(url, True, {"Authorization": "Bearer t"}, size=2)
    assert await pool.request("POST", "/x", b'{"a":1}') == (409, b"nope!!!")
    assert await pool.request("GET", "/chunked") == (200, b"abcde")
    assert await pool.request("POST", "/close", b"{}") == (201, b"ok")
    assert await pool.request("GET", "/x") == (409, b"nope!!!")
    assert seen[0] == b'POST /x HTTP/1.1 {"a":1}'
    await pool.aclose()


async def test_a_dropped_keep_alive_connection_is_replaced(server: tuple[str, list[bytes]]) -> None:
    url, _ = server
    pool = Pool(url, True, {}, size=1)
    assert (await pool.request("GET", "/x"))[0] == 409
    with pytest.raises(HTTPError):
        await pool.request("GET", "/drop")  # dropped on a fresh connection: a real failure
    assert (await pool.request("GET", "/x"))[0] == 409
    await pool.aclose()


async def test_unreachable_servers_raise_oserror() -> None:
    pool = Pool("http://127.0.0.1:9", True, {})
    with pytest.raises(OSError):
        await pool.request("GET", "/")


def test_event_notes_are_truncated_as_kube_scheduler_does() -> None:
    assert truncate_note("short") == "short"
    long = "x" * 2000
    assert truncate_note(long) == "x" * 1020 + " ..." and len(truncate_note(long).encode()) == 1024
