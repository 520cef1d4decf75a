"""A lean HTTP/1.1 server for the extender: asyncio protocol + httptools, no ASGI in between.

kube-scheduler calls an extender one request at a time over a kept-alive connection, so the
fixed cost per request is what bounds small clusters. Here a request that needs no I/O (filter,
prioritize, preempt, health) is answered from the parser callback itself, with no task created;
only bind, which calls the API server, runs as a task, and the connection stops reading until it
has answered (responses stay in request order). Keep-alive, chunked bodies (decoded by httptools),
``Expect: 100-continue`` and TLS (through asyncio's SSL transport) are supported; a malformed
request gets a 400 and the connection is closed.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable
from http import HTTPStatus

import httptools

from kubesched.extender.app import TEXT, Dispatcher, Response

log = logging.getLogger("kubesched.extender")

_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus}


def _head(status: int, content_type: bytes, length: int, keep_alive: bool) -> bytes:
    return b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n%s\r\n" % (
        status,
        _REASONS.get(status, b""),
        content_type,
        length,
        b"" if keep_alive else b"connection: close\r\n",
    )


class ExtenderProtocol(asyncio.Protocol):
    """One connection."""

    def __init__(self, dispatcher: Dispatcher, connections: set[ExtenderProtocol]) -> None:
        self.d = dispatcher
        self.connections = connections
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.chunks: list[bytes] = []
        self.size = 0
        self.expect_continue = False
        self.rejected = False  # an answer was already sent for this request (413)
        self.pending: asyncio.Task[None] | None = None
        # Requests that arrived (pipelined) while a bind was pending, answered after it in order.
        self.backlog: list[tuple[str, str, bytes, bool]] = []

    # ---- connection ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport
        self.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.discard(self)
        if self.pending is not None:
            self.pending.cancel()
        self.transport = None

    @property
    def idle(self) -> bool:
        return self.pending is None and not self.backlog and not self.chunks and not self.url

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._send((400, b"protocol upgrades are not supported", TEXT), keep_alive=False)
        except httptools.HttpParserError as err:
            self._send((400, f"malformed HTTP request: {err}".encode(), TEXT), keep_alive=False)

    # ---- parser callbacks ---------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.url = b""
        self.chunks = []
        self.size = 0
        self.expect_continue = False
        self.rejected = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        lname = name.lower()
        if lname == b"content-length" and value.isdigit() and int(value) > self.d.max_body:
            self.rejected = True
        elif lname == b"expect" and value.lower() == b"100-continue":
            self.expect_continue = True

    def on_headers_complete(self) -> None:
        if self.rejected:
            # Answer now and close: the client may still be sending a body we will not read.
            self._send(self.d.too_large(), keep_alive=False)
        elif self.expect_continue and self.transport is not None:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        if self.rejected:
            return
        self.size += len(body)
        if self.size > self.d.max_body:
            self.rejected = True
            self._send(self.d.too_large(), keep_alive=False)
            return
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        if self.rejected or self.transport is None:
            return
        path = httptools.parse_url(self.url).path.decode("utf-8", "replace")
        method = self.parser.get_method().decode()
        body = self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)
        self.chunks = []
        self.url = b""
        keep_alive = self.parser.should_keep_alive()
        if self.pending is not None:
            self.backlog.append((method, path, body, keep_alive))
        else:
            self._run(method, path, body, keep_alive)

    def _run(self, method: str, path: str, body: bytes, keep_alive: bool) -> None:
        result = self.d.dispatch(method, path, body)
        if isinstance(result, tuple):
            self._send(result, keep_alive)
        elif self.transport is not None:
            # Stop reading until this answer is out, so responses keep the order of requests.
            self.transport.pause_reading()
            self.pending = asyncio.ensure_future(self._finish(result, keep_alive))

    async def _finish(self, result: Awaitable[Response], keep_alive: bool) -> None:
        try:
            response = await result
        except Exception as err:  # the dispatcher answers errors itself; this is a last resort
            log.exception("request failed")
            response = (500, f"internal error: {err}".encode(), TEXT)
        self.pending = None
        self._send(response, keep_alive)
        while self.backlog and self.pending is None and self.transport is not None:
            self._run(*self.backlog.pop(0))
        if self.transport is not None and self.pending is None and keep_alive:
            self.transport.resume_reading()

    def _send(self, response: Response, keep_alive: bool) -> None:
        if self.transport is None:
            return
        status, body, content_type = response
        head = _head(status, content_type, len(body), keep_alive)
        if len(body) < 65536:
            self.transport.write(head + body)
        else:
            self.transport.write(head)
            self.transport.write(body)  # a large body is not copied into the head
        if not keep_alive:
            self.transport.close()


class ExtenderServer:
    """Listens, serves, and shuts down gracefully (stop accepting, finish requests in flight)."""

    def __init__(self, dispatcher: Dispatcher, host: str, port: int, ssl_context: ssl.SSLContext | None = None):
        self.dispatcher = dispatcher
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.connections: set[ExtenderProtocol] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ExtenderProtocol(self.dispatcher, self.connections),
            self.host,
            self.port,
            ssl=self.ssl_context,
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


def server_ssl_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    """TLS for the server; with ``client_ca``, clients must present a certificate it signed."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    if client_ca:
        ctx.load_verify_locations(client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
