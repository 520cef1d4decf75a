"""The API client's transport: a small pool of persistent HTTP/1.1 connections with timeouts.

Why not httpx for requests: with hundreds of bindings in flight, httpx/httpcore spent milliseconds per
request in pool bookkeeping (checking every connection's socket for each request) — more than the
scheduling itself. Requests are small JSON to one server, so a pool of plain asyncio streams does.

What it guarantees, so that a silent or broken network never stops the caller for good:

* connecting (TCP + TLS) is bounded by ``connect_timeout``; a whole exchange by a per-request timeout;
* a kept connection is checked before reuse: one the server closed (reader at EOF, or bytes nobody asked
  for) or idle for longer than ``idle_timeout`` is dropped, never written to;
* a request is never sent twice once any byte of it may have left: if the answer is lost (timeout,
  reset, EOF, garbage) ``AnswerLost`` says the outcome is unknown. Only a GET is retried, once, on a
  fresh connection, when a reused connection turned out dead;
* ``gate``: a request is written only if the gate still allows it at the moment of writing (leader
  election fences bindings with it);
* ``aclose()`` is bounded: connections are aborted, not drained;
* the Authorization header comes from ``auth`` per request (a cached string when valid); after a 401
  the credential is refreshed once and only an idempotent request is sent again — a POST or PATCH
  returns its 401 (nothing was applied) and the caller's next attempt carries the new credential.
  New TLS connections take ``tls()``'s context, so reloaded client certificates are used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import AsyncGenerator, Callable
from typing import Protocol
from urllib.parse import urlsplit

from kubesched.cluster.proxy import open_tunnel
from kubesched.errors import TransportError

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

# One line per request and per watch, as httpx writes them ("HTTP Request: GET … 200"): the CLI turns it on
# from -v 5 (cli/logs.py), as kube-scheduler's client-go logs its round trips at high verbosity.
log = logging.getLogger(__name__)


class Auth(Protocol):
    """The Authorization value of each request (`credentials.Credentials`)."""

    async def current(self) -> str: ...

    async def replacing(self, rejected: str) -> str | None: ...


class AnswerLost(TransportError):
    """The request was sent (maybe in part) and its answer was lost: the server may have applied it."""


class Fenced(TransportError):
    """The request was not sent: its gate closed (e.g. the leader lease may be lost)."""


_RETRYABLE = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, TimeoutError)


class _Conn:
    __slots__ = ("closed", "idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.closed = False
        self.idle_since = 0.0

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.transport.abort()  # no FIN handshake, no TLS close_notify: never waits on a peer

    def healthy(self, now: float, idle_timeout: float) -> bool:
        """Usable for another request: open, no EOF or unread bytes from the server, not idle too long."""
        if self.closed or self.writer.transport.is_closing():
            return False
        if self.reader.at_eof() or len(getattr(self.reader, "_buffer", b"")) or self.reader.exception():
            return False
        return now - self.idle_since <= idle_timeout

    async def roundtrip(self, request: bytes, head: bool = False) -> tuple[int, bytes]:
        self.writer.write(request)
        await self.writer.drain()
        status, length, chunked, close = await self.read_head()
        if head or status < 200 or status in (204, 304):
            body = b""  # no body by definition, whatever the headers announce (RFC 9112 §6.3)
        elif chunked:
            body = b"".join([chunk async for chunk in self.chunks()])
        elif length is not None:
            body = await self.reader.readexactly(length)
        else:
            body = await self.reader.read()
            close = True
        if close:
            self.close()
        return status, body

    async def read_head(self) -> tuple[int, int | None, bool, bool]:
        """The status line and headers: (status, content-length, chunked, connection: close)."""
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionResetError("connection closed before the response")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError(f"not an HTTP response: {status_line[:80]!r}")
        status = int(parts[1])
        length: int | None = None
        chunked = close = False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                length = int(value.strip())
            elif key == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif key == b"connection" and b"close" in value.lower():
                close = True
        return status, length, chunked, close

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The chunks of a chunked body, as they arrive (trailers read and dropped)."""
        while True:
            size = int((await self.reader.readline()).split(b";")[0].strip(), 16)
            if size == 0:
                while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                return
            yield await self.reader.readexactly(size)
            await self.reader.readexactly(2)


async def _until_eof(reader: asyncio.StreamReader, length: int | None) -> AsyncGenerator[bytes, None]:
    """A body without chunked encoding: ``length`` bytes, or everything until the server closes."""
    left = length
    while left is None or left > 0:
        data = await reader.read(65536 if left is None else min(left, 65536))
        if not data:
            if left:
                raise asyncio.IncompleteReadError(b"", left)
            return
        if left is not None:
            left -= len(data)
        yield data


class Pool:
    """Up to ``size`` persistent connections to one server (https or http)."""

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | bool,
        headers: dict[str, str],
        size: int = 16,
        *,
        connect_timeout: float = 5.0,
        timeout: float = 15.0,
        idle_timeout: float = 15.0,
        auth: Auth | None = None,
        tls: Callable[[], ssl.SSLContext] | None = None,
        server_name: str = "",
        proxy: str = "",
    ) -> None:
        url = urlsplit(server)
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.base = url.path.rstrip("/")
        if url.scheme != "https":
            self.ssl: ssl.SSLContext | None = None
        elif isinstance(ssl_context, ssl.SSLContext):
            self.ssl = ssl_context
        else:
            self.ssl = ssl.create_default_context()
            if not ssl_context:
                self.ssl.check_hostname = False
                self.ssl.verify_mode = ssl.CERT_NONE
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.auth = auth
        self.tls = tls if self.ssl is not None else None
        self.server_name = (server_name or self.host) if self.ssl is not None else None
        self.proxy = proxy
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        fixed = {"Host": f"{netloc}:{self.port}", **headers}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode()
        self._idle: list[_Conn] = []
        self._busy: set[_Conn] = set()
        self._slots = asyncio.Semaphore(size)
        self.opened = 0  # connections opened so far (tests and benchmarks read it)

    async def _open(self) -> _Conn:
        try:
            async with asyncio.timeout(self.connect_timeout):
                context = self.tls() if self.tls is not None else self.ssl
                if self.proxy:
                    reader, writer = await open_tunnel(self.proxy, self.host, self.port, context, self.server_name)
                else:
                    reader, writer = await asyncio.open_connection(
                        self.host, self.port, ssl=context, server_hostname=self.server_name
                    )
        except TimeoutError:
            raise TransportError(
                f"connecting to {self.host}:{self.port}: no answer in {self.connect_timeout}s"
            ) from None
        except (OSError, ssl.SSLError) as err:
            raise TransportError(f"connecting to {self.host}:{self.port}: {type(err).__name__}: {err}") from None
        self.opened += 1
        return _Conn(reader, writer)

    def _take_idle(self) -> _Conn | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if conn.healthy(now, self.idle_timeout):
                return conn
            conn.close()
        return None

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        *,
        time_limit: float | None = None,
        gate: Callable[[], bool] | None = None,
    ) -> tuple[int, bytes]:
        """(status, body). Raises TransportError (nothing sent), AnswerLost (sent, no answer) or Fenced."""
        auth = self.auth
        value = "" if auth is None else await auth.current()
        limit = self.timeout if time_limit is None else time_limit
        request = self._encode(method, path, body, content_type, value)
        status, data = await self._send(method, path, request, limit, gate)
        if status == 401 and auth is not None:
            fresh = await auth.replacing(value)  # obtained again even for a POST: the caller's next try carries it
            if fresh is not None and method in IDEMPOTENT:
                request = self._encode(method, path, body, content_type, fresh)
                status, data = await self._send(method, path, request, limit, gate)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("HTTP Request: %s %s:%d%s%s %d", method, self.host, self.port, self.base, path, status)
        return status, data

    def _encode(self, method: str, path: str, body: bytes | None, content_type: str, auth: str) -> bytes:
        head = f"{method} {self.base}{path} HTTP/1.1\r\n".encode() + self._head
        if auth:
            head += f"Authorization: {auth}\r\n".encode()
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n".encode()
        return head + b"\r\n" + (body or b"")

    async def _send(
        self, method: str, path: str, request: bytes, limit: float, gate: Callable[[], bool] | None
    ) -> tuple[int, bytes]:
        async with self._slots:
            conn = self._take_idle()
            reused = conn is not None
            for attempt in range(2):
                if conn is None:
                    conn = await self._open()
                if gate is not None and not gate():
                    self._release(conn)
                    raise Fenced(f"{method} {path}: not sent (fenced)")
                current = conn
                self._busy.add(current)
                try:
                    async with asyncio.timeout(limit):
                        result = await current.roundtrip(request, method == "HEAD")
                except _RETRYABLE as err:
                    current.close()
                    timed_out = isinstance(err, TimeoutError)
                    if method == "GET" and reused and attempt == 0 and not timed_out:
                        # A kept connection that died after the check (closed by the server meanwhile):
                        # a GET changes nothing, so it may go again on a fresh connection.
                        conn, reused = None, False
                        continue
                    what = f"no answer within {limit}s" if timed_out else f"{type(err).__name__}: {err}"
                    raise AnswerLost(f"{method} {path}: {what}") from None
                except BaseException:
                    current.close()  # cancelled mid-exchange: the connection's state is unknown
                    raise
                finally:
                    self._busy.discard(current)
                self._release(current)
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    async def stream(
        self, path: str, read_timeout: float | None, refuse: Callable[[int, bytes], None]
    ) -> AsyncGenerator[bytes, None]:
        """GET ``path`` on a connection of its own and yield the body as it arrives (a watch).

        The connection is never pooled: it is aborted when the stream ends, fails or is cancelled (also
        mid-connect or mid-handshake), and by ``aclose()``. A read waiting longer than ``read_timeout``
        raises TransportError (a silent server). A non-2xx answer is handed to ``refuse`` (which raises);
        after a 401 the credential is refreshed and the GET sent once more.
        """
        auth = self.auth
        value = "" if auth is None else await auth.current()
        for attempt in range(2):
            conn = await self._open()
            self._busy.add(conn)
            body_parts: AsyncGenerator[bytes, None] | None = None
            try:
                try:
                    async with asyncio.timeout(self.timeout):
                        conn.writer.write(self._encode("GET", path, None, "", value))
                        await conn.writer.drain()
                        status, length, chunked, _ = await conn.read_head()
                        if not 200 <= status < 300:
                            body = b"".join([c async for c in conn.chunks()]) if chunked else b""
                            if not chunked and length:
                                body = await conn.reader.readexactly(length)
                except _RETRYABLE as err:
                    what = f"no answer within {self.timeout}s" if isinstance(err, TimeoutError) else repr(err)
                    raise TransportError(f"watch {path}: {what}") from None
                if log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "HTTP Request: GET %s:%d%s%s %d (watch stream)", self.host, self.port, self.base, path, status
                    )
                if not 200 <= status < 300:
                    if status == 401 and auth is not None and attempt == 0:
                        fresh = await auth.replacing(value)
                        if fresh is not None:
                            value = fresh
                            continue
                    refuse(status, body)
                    raise TransportError(f"watch {path}: answered {status}")
                body_parts = conn.chunks() if chunked else _until_eof(conn.reader, length)
                while True:
                    try:
                        async with asyncio.timeout(read_timeout):
                            chunk = await anext(body_parts, None)
                    except _RETRYABLE as err:
                        if isinstance(err, TimeoutError):
                            raise TransportError(f"watch {path}: silent for {read_timeout}s") from None
                        raise TransportError(f"watch {path}: {type(err).__name__}: {err}") from None
                    if chunk is None:
                        return
                    yield chunk
            finally:
                self._busy.discard(conn)
                conn.close()
                if body_parts is not None:
                    await body_parts.aclose()

    def _release(self, conn: _Conn) -> None:
        if not conn.closed:
            conn.idle_since = time.monotonic()
            self._idle.append(conn)

    async def aclose(self) -> None:
        """Abort every connection (idle and busy): bounded, whatever the network does."""
        for conn in [*self._idle, *self._busy]:
            with contextlib.suppress(Exception):
                conn.close()
        self._idle.clear()
        self._busy.clear()
        # A closed transport finishes closing in a callback of the loop: give it that turn, so that nothing is
        # left half-closed when the loop ends right after (no network wait: it only runs what is scheduled).
        await asyncio.sleep(0)
