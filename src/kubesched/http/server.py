"""A lean HTTP/1.1 server (asyncio protocol + httptools, no ASGI in between) for a `Handler`: what
`kubesched extender serve` and `kubesched webhook serve` run.

kube-scheduler calls an extender one request at a time over a kept-alive connection, so the
fixed cost per request is what bounds small clusters. Here a request the handler answers without
I/O (the extender's filter, prioritize, preempt; health) is answered from the parser callback
itself, with no task created; an awaitable answer (the extender's bind, the webhook's reviews)
runs as a task, and the connection stops reading until it has answered (responses stay in request
order). Keep-alive, chunked bodies (decoded by httptools),
``Expect: 100-continue`` and TLS (through asyncio's SSL transport) are supported; a malformed
request gets a 400 and the connection is closed.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable
from dataclasses import dataclass
from http import HTTPStatus

import httptools

from kubesched.http.handler import TEXT, Body, Handler, Response

log = logging.getLogger("kubesched.http")

_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus}


def _head(status: int, content_type: bytes, length: int, keep_alive: bool) -> bytes:
    return b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n%s\r\n" % (
        status,
        _REASONS.get(status, b""),
        content_type,
        length,
        b"" if keep_alive else b"connection: close\r\n",
    )


@dataclass(frozen=True)
class Limits:
    """What one client may cost the server (net/http and uvicorn as references, see docs/extender.md)."""

    # Checked per read while a request's head arrives, so it may be passed by at most one read (up
    # to 256 KiB) when requests are pipelined; net/http allows 4 KiB past it.

    max_header_bytes: int = 1 << 20  # request line + headers (net/http's DefaultMaxHeaderBytes); 431 past it
    header_timeout: float = 10.0  # from a new connection or a request's first byte to its last header
    body_timeout: float = 60.0  # from the last header to the body's last byte
    # Between requests on a kept-alive connection. Longer than kube-scheduler's idle connections live
    # (client-go: 90 s), so the client closes first and never sends on a connection being closed.
    idle_timeout: float = 120.0
    max_connections: int = 1024  # past it a new connection gets a 503 and is closed


_HEAD, _BODY, _BUSY, _IDLE = 0, 1, 2, 3  # a connection's phases; the deadline depends on the phase
_LINGER = 0.5  # seconds input is drained after a closing answer (net/http's rstAvoidanceDelay)
_TOO_MANY = b"too many connections (--max-connections %d): try again later"


_NO_CLIENT_CERT = b"%s needs a client certificate signed by the server's client CA (--client-ca)"


class HTTPProtocol(asyncio.Protocol):
    """One connection."""

    def __init__(
        self,
        handler: Handler,
        connections: set[HTTPProtocol],
        limits: Limits = Limits(),
        open_paths: frozenset[str] | None = None,
    ) -> None:
        self.handler = handler
        self.open_paths = open_paths
        self.anonymous = False  # TLS without a client certificate, where one is needed beyond `open_paths`
        self.connections = connections
        self.limits = limits
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        # Bytes read while a request's head (request line + headers) was incomplete: counted per read,
        # not per header, because httptools buffers a header's pieces and hands it over only whole.
        self.in_head = True
        self.head_bytes = 0
        # Bytes read after the head beyond the body itself: chunk framing and trailers. httptools buffers
        # trailers like headers, so they are bounded by the header limit too.
        self.framing = 0
        self.body = Body(handler.max_body)
        self.expect_continue = False
        self.rejected = False  # an answer was already sent for this request (413, 431)
        self.pending: asyncio.Task[None] | None = None
        # Requests that arrived (pipelined) while a bind was pending, answered after it in order.
        self.backlog: list[tuple[str, str, bytes, bool]] = []
        # One timer per connection: moving the deadline is a float store; the timer re-arms itself
        # when it fires before the deadline (it never waits longer than the shortest timeout). Callbacks only
        # note the phase; its clock is started once per read (`_start_phase`), not once per callback.
        self.loop = asyncio.get_running_loop()
        self.timeouts = (limits.header_timeout, limits.body_timeout, 0.0, limits.idle_timeout)
        self.tick = min(limits.header_timeout, limits.body_timeout, limits.idle_timeout)
        self.phase = _HEAD
        self.timed = -1  # the phase the deadline was set for; -1: set it at the end of this read
        self.deadline: float | None = None
        self.timer: asyncio.TimerHandle | None = None

    # ---- connection ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport
        if self.open_paths is not None:
            tls = transport.get_extra_info("ssl_object")
            self.anonymous = tls is None or not tls.getpeercert()
        if len(self.connections) >= self.limits.max_connections:
            body = _TOO_MANY % self.limits.max_connections
            transport.write(_head(503, TEXT, len(body), False) + body)  # type: ignore[attr-defined]
            self._close_after_answer()  # lingering, so the client's request does not reset the 503 away
            return
        self.connections.add(self)
        self._start_phase()

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.discard(self)
        if self.pending is not None:
            self.pending.cancel()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.transport = None

    # ---- timeouts -----------------------------------------------------------------------------

    def _start_phase(self) -> None:
        phase = self.timed = self.phase
        if phase == _BUSY:  # a request is being answered: no read deadline until it is out
            self.deadline = None
            return
        now = self.loop.time()
        self.deadline = now + self.timeouts[phase]
        if self.timer is None:
            self._arm(now)

    def _arm(self, now: float) -> None:
        # Never further ahead than the shortest timeout, so a deadline moved earlier is still met
        # without cancelling the timer: a kept-alive connection costs one wake-up per header_timeout.
        assert self.deadline is not None
        self.timer = self.loop.call_at(min(self.deadline, now + self.tick), self._on_timer)

    def _on_timer(self) -> None:
        self.timer = None
        if self.transport is None:
            return
        now = self.loop.time()
        if self.deadline is None:  # a request is being answered: no read deadline until it is out
            self.timer = self.loop.call_at(now + self.tick, self._on_timer)
            return
        if now < self.deadline:
            self._arm(now)
            return
        # Silent, too slow or idle: close. (net/http closes without an answer too; a 408 could
        # interleave with a half-sent request.)
        self.transport.close()

    @property
    def idle(self) -> bool:
        return self.pending is None and not self.backlog and not self.body.size and not self.url

    def data_received(self, data: bytes) -> None:
        if self.transport is None:  # answered and closing: what still arrives is dropped
            return
        if self.in_head:
            self.head_bytes += len(data)
            if self.head_bytes > self.limits.max_header_bytes and not self._head_ends_in_time(data):
                self._head_too_large()
                return
        else:
            self.framing += len(data)
            if self.framing - self.body.size > self.limits.max_header_bytes and not self.rejected:
                self._head_too_large("chunk framing and trailers")
                return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._send((400, b"protocol upgrades are not supported", TEXT), keep_alive=False)
        except httptools.HttpParserError as err:
            self._send((400, f"malformed HTTP request: {err}".encode(), TEXT), keep_alive=False)
        if self.phase != self.timed:
            self._start_phase()

    # ---- parser callbacks ---------------------------------------------------------------------

    def _head_ends_in_time(self, data: bytes) -> bool:
        """Over the limit with this read: whether the head still ends within the limit (it ends in this
        read at the latest; ``\r\n\r\n`` split across reads is taken as ending in time)."""
        room = self.limits.max_header_bytes - (self.head_bytes - len(data))
        return room >= 0 and (data.find(b"\r\n\r\n", 0, room + 4) >= 0 or data.startswith((b"\n", b"\r\n")))

    def _head_too_large(self, what: str = "request line and headers") -> None:
        limit = self.limits.max_header_bytes
        body = f"{what} over the limit of {limit} bytes (--max-header-bytes)".encode()
        self._send((431, body, TEXT), keep_alive=False)

    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_continue = False
        self.rejected = False
        self.phase = _HEAD
        self.timed = -1  # a new request: its header clock starts with this read

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        lname = name.lower()
        if lname == b"content-length":
            self.rejected = not self.body.announced_fits(value)
        elif lname == b"expect" and value.lower() == b"100-continue":
            self.expect_continue = True

    def on_headers_complete(self) -> None:
        self.in_head = False
        if self.transport is None:
            return
        self.phase = _BODY
        if self.rejected:
            # Answer now and close: the client may still be sending a body we will not read.
            self._send(self.handler.too_large(self._path()), keep_alive=False)
        elif self.expect_continue:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        if not self.rejected and not self.body.add(body):
            self.rejected = True
            self._send(self.handler.too_large(self._path()), keep_alive=False)

    def on_message_complete(self) -> None:
        self.in_head = True
        self.head_bytes = 0
        self.framing = 0
        if self.rejected or self.transport is None:
            return
        self.phase = _BUSY
        path = self._path()
        method = self.parser.get_method().decode()
        body = self.body.take()
        self.url = b""
        keep_alive = self.parser.should_keep_alive()
        if self.pending is not None:
            self.backlog.append((method, path, body, keep_alive))
        else:
            self._run(method, path, body, keep_alive)

    def _path(self) -> str:
        return httptools.parse_url(self.url).path.decode("utf-8", "replace")

    def _run(self, method: str, path: str, body: bytes, keep_alive: bool) -> None:
        if self.anonymous and self.open_paths is not None and path not in self.open_paths:
            self._send((401, _NO_CLIENT_CERT % path.encode(), TEXT), keep_alive)
            return
        result = self.handler.dispatch(method, path, body)
        if isinstance(result, tuple):
            self._send(result, keep_alive, method == "HEAD")
        elif self.transport is not None:
            # Stop reading until this answer is out, so responses keep the order of requests.
            self.transport.pause_reading()
            self.pending = asyncio.ensure_future(self._finish(result, keep_alive))

    async def _finish(self, result: Awaitable[Response], keep_alive: bool) -> None:
        try:
            response = await result
        except Exception as err:  # the handler answers errors itself; this is a last resort
            log.exception("request failed")
            response = (500, f"internal error: {err}".encode(), TEXT)
        self.pending = None
        self._send(response, keep_alive)
        while self.backlog and self.pending is None and self.transport is not None:
            self._run(*self.backlog.pop(0))
        if self.transport is not None and self.pending is None and keep_alive:
            self.transport.resume_reading()
        if self.phase != self.timed:
            self._start_phase()

    def _close_after_answer(self) -> None:
        # Closing with unread input makes the kernel send a reset, which can destroy the answer before
        # the client reads it (a 431 or 413 while the client still sends). So, as net/http does: close
        # our side for writing, drop what still arrives, and close for good after a short delay.
        transport = self.transport
        assert transport is not None
        self.transport = None  # nothing more is read or answered on this connection
        if transport.can_write_eof():  # TLS cannot half-close: the client sees the end at the close
            transport.write_eof()
        self.loop.call_later(_LINGER, transport.close)

    def _send(self, response: Response, keep_alive: bool, head_only: bool = False) -> None:
        if self.transport is None:
            return
        status, body, content_type = response
        head = _head(status, content_type, len(body), keep_alive)
        if head_only:
            self.transport.write(head)  # HEAD: the length of the body, never the body
        elif len(body) < 65536:
            self.transport.write(head + body)
        else:
            self.transport.write(head)
            self.transport.write(body)  # a large body is not copied into the head
        if not keep_alive:
            self._close_after_answer()
        elif self.pending is None and not self.backlog:
            self.phase = _IDLE


class HTTPServer:
    """Listens, serves, and shuts down gracefully (stop accepting, finish requests in flight)."""

    def __init__(
        self,
        handler: Handler,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None = None,
        limits: Limits = Limits(),
        open_paths: frozenset[str] | None = None,
    ):
        """``open_paths``: with a TLS context that takes clients without a certificate (`tls.server_context`'s
        ``optional``), the only paths those clients may request; the others are answered 401."""
        self.handler = handler
        self.open_paths = open_paths
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.limits = limits
        self.connections: set[HTTPProtocol] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HTTPProtocol(self.handler, self.connections, self.limits, self.open_paths),
            self.host,
            self.port,
            ssl=self.ssl_context,
            ssl_handshake_timeout=self.limits.header_timeout if self.ssl_context else None,
            reuse_address=True,
            backlog=1024,
        )

    @property
    def bound_port(self) -> int:
        assert self._server is not None and self._server.sockets
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def shutdown(self, grace: float = 10.0) -> None:
        if self._server is None:
            return
        self._server.close()
        deadline = asyncio.get_running_loop().time() + grace
        # Connections turn idle inside protocol callbacks; polling during shutdown is simpler than
        # threading an event through every callback.
        while any(not c.idle for c in self.connections) and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        await self._server.wait_closed()
