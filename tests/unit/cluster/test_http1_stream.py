"""Watch streams over the HTTP/1.1 pool: chunks as they come, silence, refusals, 401 refresh, and the
connection aborted however the stream ends (finished, failed, left early, cancelled, pool closed)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

import pytest

from kubesched.cluster.http1 import Pool, TransportError


class Refused(Exception):
    pass


def refuse(status: int, body: bytes) -> None:
    raise Refused(status, body)


class Server:
    """Answers each GET by its path; counts open connections to tell whether the client let go."""

    def __init__(self) -> None:
        self.open = 0
        self.changed = asyncio.Condition()
        self.auth: list[bytes] = []
        self.handlers: set[asyncio.Task[None]] = set()
        self.url = ""
        self.more = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        await self.count(+1)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split()[1].split(b"?")[0]
            token = next((ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"authorization:")), b"")
            self.auth.append(token.split(b":", 1)[1].strip() if token else b"")
            if path == b"/events":
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                writer.write(b'6\r\n{"a":1\r\n')
                await writer.drain()
                eof = asyncio.ensure_future(reader.read())  # the client may leave before the rest
                more = asyncio.ensure_future(self.more.wait())
                await asyncio.wait({eof, more}, return_when=asyncio.FIRST_COMPLETED)
                more.cancel()
                if eof.done():
                    return
                eof.cancel()
                writer.write(b"2\r\n}\n\r\n4\r\n{}\n\n\r\n0\r\n\r\n")
            elif path == b"/plain":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nab\ncd\n")
            elif path == b"/gone":
                writer.write(b"HTTP/1.1 410 Gone\r\nContent-Length: 4\r\n\r\ngone")
            elif path == b"/auth" and self.auth[-1] != b"Bearer fresh":
                writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
            elif path == b"/auth":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            elif path == b"/silent":
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                await writer.drain()
            await writer.drain()
            await reader.read()  # until the client closes
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            await self.count(-1)
            writer.close()

    async def count(self, delta: int) -> None:
        async with self.changed:
            self.open += delta
            self.changed.notify_all()

    async def until(self, opened: bool) -> None:
        async with asyncio.timeout(5), self.changed:
            await self.changed.wait_for(lambda: bool(self.open) == opened)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    s = Server()
    srv = await asyncio.start_server(s.handle, "127.0.0.1", 0)
    s.url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
    async with srv:
        yield s
        for task in s.handlers:
            task.cancel()
        await asyncio.gather(*s.handlers, return_exceptions=True)


async def closed(server: Server) -> None:
    await server.until(opened=False)


async def test_chunks_arrive_as_the_server_sends_them_and_the_connection_is_closed_after(server: Server) -> None:
    pool = Pool(server.url, True, {})
    got: list[bytes] = []
    async for chunk in pool.stream("/events", 5, refuse):
        got.append(chunk)
        server.more.set()  # the second part is sent only once the first was received
    assert b"".join(got) == b'{"a":1}\n{}\n\n'
    assert got[0] == b'{"a":1'
    await closed(server)
    assert not pool._busy and not pool._idle  # a stream's connection is never pooled


async def test_a_body_with_a_length_is_read_to_its_end(server: Server) -> None:
    pool = Pool(server.url, True, {})
    assert b"".join([c async for c in pool.stream("/plain", 5, refuse)]) == b"ab\ncd\n"
    await closed(server)


async def test_an_error_answer_goes_to_refuse_with_its_body(server: Server) -> None:
    pool = Pool(server.url, True, {})
    with pytest.raises(Refused) as err:
        async for _ in pool.stream("/gone", 5, refuse):
            pass
    assert err.value.args == (410, b"gone")
    await closed(server)


class Tokens:
    def __init__(self) -> None:
        self.replaced: list[str] = []

    async def current(self) -> str:
        return "Bearer old"

    async def replacing(self, rejected: str) -> str | None:
        self.replaced.append(rejected)
        return "Bearer fresh"


async def test_a_401_refreshes_the_credential_and_asks_once_more(server: Server) -> None:
    tokens = Tokens()
    pool = Pool(server.url, True, {}, auth=tokens)
    assert b"".join([c async for c in pool.stream("/auth", 5, refuse)]) == b"ok\n"
    assert server.auth == [b"Bearer old", b"Bearer fresh"] and tokens.replaced == ["Bearer old"]


async def test_silence_longer_than_the_read_timeout_fails_the_stream(server: Server) -> None:
    pool = Pool(server.url, True, {})
    with pytest.raises(TransportError, match=r"silent for 0.2s"):
        async for _ in pool.stream("/silent", 0.2, refuse):
            pass
    await closed(server)


async def test_leaving_early_or_being_cancelled_aborts_the_connection(server: Server) -> None:
    pool = Pool(server.url, True, {})
    async with contextlib.aclosing(pool.stream("/events", 5, refuse)) as stream:
        async for _ in stream:
            break
    await closed(server)

    async def consume() -> None:
        async for _ in pool.stream("/silent", None, refuse):
            pass

    task = asyncio.create_task(consume())
    await server.until(opened=True)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await closed(server)
    gc.collect()  # a leaked socket would warn here (warnings are errors)


async def test_aclose_aborts_a_stream_in_progress(server: Server) -> None:
    pool = Pool(server.url, True, {})
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in pool.stream("/events", None, refuse):
            started.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    await pool.aclose()
    await closed(server)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_cancelled_while_connecting_leaves_nothing_open() -> None:
    # A server that accepts TCP but never answers the TLS handshake: the stream is cancelled mid-handshake.
    accepted = asyncio.Event()
    client_gone = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        with contextlib.suppress(ConnectionError):
            await reader.read()  # returns once the client closed its socket
        client_gone.set()
        writer.close()

    srv = await asyncio.start_server(hold, "127.0.0.1", 0)
    async with srv:
        pool = Pool(f"https://127.0.0.1:{srv.sockets[0].getsockname()[1]}", False, {}, connect_timeout=30)

        async def consume() -> None:
            async for _ in pool.stream("/x", None, refuse):
                pass

        task = asyncio.create_task(consume())
        await asyncio.wait_for(accepted.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(client_gone.wait(), 5)
        gc.collect()
