"""`kubesched webhook serve` under hostile clients, over its real TLS port: what one client may cost it
(--max-header-bytes, --header-timeout, --body-timeout, --idle-timeout, --max-connections), HEAD, and
that other clients are served all along."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.testing.waiting import until

from .test_webhook_serve import Webhook, review, start_webhook

CONFIG = "rules:\n- requireLabel: {schedulerName: kubesched, label: custom}\n"
LIMITS = ("--max-header-bytes", "65536", "--header-timeout", "1", "--body-timeout", "1")
LIMITS += ("--idle-timeout", "1.5", "--max-connections", "4")
GOOD = json.dumps(review("u-1", {"spec": {"schedulerName": "kubesched"}})).encode()


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    hook = start_webhook(tmp_path_factory.mktemp("webhook-limits"), CONFIG, *LIMITS)
    yield hook
    assert hook.stop() == 0, hook.output()
    assert "Traceback" not in hook.output()


def post(body: bytes, path: str = "/validate") -> bytes:
    return b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body)


async def connect(hook: Webhook) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = hook.url.removeprefix("https://").split(":")
    return await asyncio.open_connection(host, int(port), ssl=hook.tls())


async def answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    status = await reader.readline()
    headers = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers["content-length"])) if status.split()[1:2] != [b"100"] else b""
    return int(status.split()[1]), headers, body


async def judged(hook: Webhook) -> bool:
    """One good review on a new connection answered 200 with the denial of the rule."""
    reader, writer = await connect(hook)
    try:
        writer.write(post(GOOD))
        status, _, body = await asyncio.wait_for(answer(reader), 5)
    finally:
        await shut(writer)
    return status == 200 and json.loads(body)["response"]["allowed"] is False


async def shut(writer: asyncio.StreamWriter) -> None:
    """Close a test connection and wait until it is closed (a transport left closing leaks past the test)."""
    writer.close()
    with contextlib.suppress(ConnectionError, ssl.SSLError):
        await writer.wait_closed()


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """What the server sent before closing (fails if it does not close in time)."""
    try:
        return await asyncio.wait_for(reader.read(), seconds)
    except (ConnectionError, ssl.SSLError):
        return b"<reset>"


async def test_a_complete_header_over_the_limit_is_431(hook: Webhook) -> None:
    reader, writer = await connect(hook)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 * 1024) + b"\r\n\r\n")
    status, _, body = await asyncio.wait_for(answer(reader), 5)
    assert status == 431 and b"--max-header-bytes" in body
    await shut(writer)
    assert await judged(hook)


async def test_a_header_that_never_ends_is_cut_off_while_others_are_served(hook: Webhook) -> None:
    reader, writer = await connect(hook)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
    cut = asyncio.ensure_future(reader.readexactly(12))  # done when the answer begins
    served = sent = 0
    for _ in range(40):  # 160 KiB planned in 4 KiB pieces; the limit is 64 KiB
        if cut.done():
            break
        writer.write(b"a" * 4096)
        await writer.drain()
        sent += 1
        served += await judged(hook)
    assert sent < 40 and served == sent
    assert await asyncio.wait_for(cut, 5) == b"HTTP/1.1 431"
    await shut(writer)


async def test_silent_slow_and_idle_clients_are_closed(hook: Webhook) -> None:
    host, port = hook.url.removeprefix("https://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))  # TCP only, no TLS handshake
    assert await closed_within(reader, 5) == b""
    await shut(writer)
    reader, writer = await connect(hook)  # TLS, then nothing
    assert await closed_within(reader, 5) == b""
    await shut(writer)
    reader, writer = await connect(hook)
    writer.write(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    assert await closed_within(reader, 5) == b""  # the body never finished: closed after --body-timeout
    await shut(writer)
    reader, writer = await connect(hook)
    writer.write(post(GOOD))
    assert (await asyncio.wait_for(answer(reader), 5))[0] == 200
    assert await closed_within(reader, 5) == b""  # then idle: closed after --idle-timeout
    await shut(writer)
    assert await judged(hook)


async def test_connections_past_the_cap_get_503(hook: Webhook) -> None:
    held = [await connect(hook) for _ in range(4)]
    reader, refused = await connect(hook)
    status, _, body = await asyncio.wait_for(answer(reader), 5)
    await shut(refused)
    assert status == 503 and b"--max-connections 4" in body
    for _, writer in held:
        await shut(writer)

    async def served() -> bool:
        try:
            return bool(await judged(hook))
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, ValueError, IndexError):
            return False

    await until(served, "the webhook accepting connections again (closed ones free their slots)", within=10)


async def test_head_sends_no_body(hook: Webhook) -> None:
    reader, writer = await connect(hook)
    writer.write(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + post(GOOD))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 200") and b"content-length: 2" in head
    status, _, body = await asyncio.wait_for(answer(reader), 5)  # not "ok" glued in front of it
    assert status == 200 and json.loads(body)["response"]["uid"] == "u-1"
    await shut(writer)


def test_tls_handshake_stays_required(hook: Webhook, tmp_path: Path) -> None:
    async def plain() -> bytes:
        host, port = hook.url.removeprefix("https://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(post(GOOD))
        try:
            return await closed_within(reader, 5)
        finally:
            await shut(writer)

    assert b"HTTP/1.1 200" not in asyncio.run(plain())
