"""The API client's HTTP/1.1 pool against a local server: lengths, chunks, closes, stale keep-alives,
timeouts, answers lost (never resent), the write fence, bounded close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubesched.cluster.http1 import AnswerLost, Fenced, Pool, TransportError
from kubesched.scheduler.remote.apiserver import truncate_note
from kubesched.testing.waiting import until


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[bytes]]]:
    seen: list[bytes] = []
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)  # cancelled at teardown: a silent handler would otherwise outlive the test
        try:
            await answer(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        finally:
            writer.close()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
            elif path == b"/nocontent":
                # 204 without Content-Length on a kept-alive connection: no body by definition.
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            elif path == b"/silent":
                await asyncio.Event().wait()  # never answers, never closes
            elif path == b"/bye":
                # Answers, then closes without saying so (no Connection: close): the kept connection is dead.
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                writer.close()
                return
            else:
                writer.write(b"HTTP/1.1 409 Conflict\r\nContent-Length: 7\r\n\r\nnope!!!")
            await writer.drain()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield f"http://127.0.0.1:{port}", seen
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)


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
    with pytest.raises(AnswerLost):
        await pool.request("GET", "/drop")  # a GET goes again once on a fresh connection, dropped again: lost
    assert (await pool.request("GET", "/x"))[0] == 409
    await pool.aclose()


async def test_unreachable_servers_raise_oserror() -> None:
    pool = Pool("http://127.0.0.1:9", True, {})
    with pytest.raises(OSError):
        await pool.request("GET", "/")


async def test_a_post_whose_answer_is_lost_is_never_sent_again(server: tuple[str, list[bytes]]) -> None:
    url, seen = server
    pool = Pool(url, True, {}, size=1)
    assert (await pool.request("GET", "/x"))[0] == 409  # a kept connection
    with pytest.raises(AnswerLost):
        await pool.request("POST", "/drop", b'{"bind":1}')
    assert [line for line in seen if line.startswith(b"POST /drop")] == [b'POST /drop HTTP/1.1 {"bind":1}']
    await pool.aclose()


async def test_a_kept_connection_the_server_closed_is_dropped_before_sending(server: tuple[str, list[bytes]]) -> None:
    url, seen = server
    pool = Pool(url, True, {}, size=1)
    assert (await pool.request("GET", "/bye"))[0] == 200
    await until(lambda: pool._idle and pool._idle[0].reader.at_eof(), "the server's FIN on the kept connection")
    assert await pool.request("POST", "/x", b"{}") == (409, b"nope!!!")  # on a new connection, sent once
    assert pool.opened == 2
    assert [line for line in seen if line.startswith(b"POST")] == [b"POST /x HTTP/1.1 {}"]
    await pool.aclose()


async def test_idle_connections_older_than_the_idle_timeout_are_not_reused(server: tuple[str, list[bytes]]) -> None:
    url, _ = server
    pool = Pool(url, True, {}, size=1, idle_timeout=0.05)
    await pool.request("GET", "/x")
    await pool.request("GET", "/x")
    assert pool.opened == 1
    await asyncio.sleep(0.1)  # the behaviour under test: time passing beyond the idle timeout
    await pool.request("GET", "/x")
    assert pool.opened == 2
    await pool.aclose()


async def test_a_silent_server_makes_the_answer_lost_within_the_time_limit(server: tuple[str, list[bytes]]) -> None:
    url, seen = server
    pool = Pool(url, True, {}, size=1, timeout=0.2)
    async with asyncio.timeout(5):  # the old pool waited forever
        with pytest.raises(AnswerLost, match=r"no answer within 0\.2s"):
            await pool.request("POST", "/silent", b"{}")
        with pytest.raises(AnswerLost):
            await pool.request("GET", "/silent", time_limit=0.1)
    assert sum(1 for line in seen if line.startswith(b"GET /silent")) == 1  # a timeout is never retried
    assert (await pool.request("GET", "/x"))[0] == 409  # the pool is usable afterwards
    await pool.aclose()


async def test_a_server_that_never_completes_tls_fails_the_connect_within_the_timeout() -> None:
    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read()  # says nothing; ends when the client goes
        finally:
            writer.close()

    srv = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        pool = Pool(f"https://127.0.0.1:{port}", False, {}, connect_timeout=0.2)
        async with asyncio.timeout(5):
            with pytest.raises(TransportError, match=r"no answer in 0\.2s") as info:
                await pool.request("POST", "/api/v1/namespaces/a/pods/b/binding", b"{}")
        assert not isinstance(info.value, AnswerLost)  # nothing was sent: safe to try again
        await pool.aclose()


async def test_a_closed_gate_sends_nothing(server: tuple[str, list[bytes]]) -> None:
    url, seen = server
    pool = Pool(url, True, {}, size=1)
    with pytest.raises(Fenced):
        await pool.request("POST", "/x", b"{}", gate=lambda: False)
    assert seen == []
    assert (await pool.request("POST", "/x", b"{}", gate=lambda: True))[0] == 409
    await pool.aclose()


async def test_aclose_is_bounded_with_a_request_stuck_on_a_silent_connection(server: tuple[str, list[bytes]]) -> None:
    url, seen = server
    pool = Pool(url, True, {}, size=1, timeout=60)
    stuck = asyncio.create_task(pool.request("POST", "/silent", b"{}"))
    await until(lambda: any(line.startswith(b"POST /silent") for line in seen), "the request at the server")
    async with asyncio.timeout(2):
        await pool.aclose()
        with pytest.raises(AnswerLost):
            await stuck  # its connection was aborted under it


def test_event_notes_are_truncated_as_kube_scheduler_does() -> None:
    assert truncate_note("short") == "short"
    long = "x" * 2000
    assert truncate_note(long) == "x" * 1020 + " ..." and len(truncate_note(long).encode()) == 1024


async def test_a_204_and_a_head_answer_have_no_body_and_do_not_wait(server: tuple[str, list[bytes]]) -> None:
    url, _ = server
    pool = Pool(url, False, {}, timeout=5)
    # Before: read until the server closed, so each waited the full timeout and raised AnswerLost.
    assert await asyncio.wait_for(pool.request("DELETE", "/nocontent"), 2) == (204, b"")
    assert await asyncio.wait_for(pool.request("HEAD", "/close"), 2) == (201, b"")
    assert await asyncio.wait_for(pool.request("GET", "/chunked"), 2) == (200, b"abcde")
    await pool.aclose()
