"""The extender's HTTP face: a bare ASGI app (no framework on the hot path).

Routes, under an optional prefix: POST /filter, /prioritize, /bind, /preempt; GET /healthz,
/readyz (200 only once the node cache has synced), /metrics. Bad input gets a 4xx whose text says
what is wrong; an unexpected failure gets a 500 with its message and is logged; the server keeps
serving either way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kubesched.extender.metrics import ExtenderMetrics
from kubesched.extender.service import BadRequest, ExtenderService

log = logging.getLogger("kubesched.extender")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

VERBS = ("filter", "prioritize", "bind", "preempt")
DEFAULT_MAX_BODY = 256 * 1024 * 1024
_JSON = [(b"content-type", b"application/json")]
_TEXT = [(b"content-type", b"text/plain; charset=utf-8")]


class TooLarge(Exception):
    pass


class ExtenderApp:
    def __init__(
        self,
        service: ExtenderService,
        *,
        prefix: str = "",
        max_body: int = DEFAULT_MAX_BODY,
        metrics: ExtenderMetrics | None = None,
    ) -> None:
        self.service = service
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.max_body = max_body
        self.metrics = metrics or ExtenderMetrics()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path in ("/healthz", "/livez"):
            return await _reply(send, 200, b"ok", _TEXT)
        if path == "/readyz":
            ready = self.service.cache.synced.is_set()
            return await _reply(send, 200 if ready else 503, b"ok" if ready else b"node cache not synced yet", _TEXT)
        if path == "/metrics":
            self.metrics.nodes.set(len(self.service.cache.table))
            return await _reply(send, 200, self.metrics.render(), [(b"content-type", b"text/plain; version=0.0.4")])
        verb = path[len(self.prefix) + 1 :] if path.startswith(self.prefix + "/") else ""
        if verb not in VERBS:
            served = ", ".join(f"{self.prefix}/{v}" for v in VERBS)
            return await _reply(send, 404, f"unknown path {path!r}: this extender serves POST {served}".encode(), _TEXT)
        if method != "POST":
            return await _reply(send, 405, f"{verb} takes POST, not {method}".encode(), _TEXT)
        start = time.perf_counter()
        status, body, headers = await self._serve(verb, scope, receive)
        await _reply(send, status, body, headers)
        self.metrics.requests.labels(verb, str(status)).inc()
        self.metrics.latency.labels(verb).observe(time.perf_counter() - start)

    async def _serve(self, verb: str, scope: Scope, receive: Receive) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        try:
            body = await self._body(scope, receive)
        except TooLarge:
            return 413, f"request body over the limit of {self.max_body} bytes (--max-body-bytes)".encode(), _TEXT
        if not body:
            return 400, f"empty request body: {verb} takes a JSON object".encode(), _TEXT
        try:
            if verb == "filter":
                out = self.service.filter(body)
            elif verb == "prioritize":
                out = self.service.prioritize(body)
            elif verb == "bind":
                out = await self.service.bind(body)
            else:
                out = self.service.preempt(body)
        except BadRequest as err:
            log.info("%s: bad request: %s", verb, err)
            return 400, str(err).encode(), _TEXT
        except Exception as err:
            log.exception("%s failed", verb)
            return 500, f"internal error in {verb}: {type(err).__name__}: {err}".encode(), _TEXT
        return 200, out, _JSON

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                raise TooLarge
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > self.max_body:
                    raise TooLarge
                chunks.append(chunk)
            more = message.get("more_body", False)
        # Join once: appending to bytes in the loop would copy the body again for every chunk.
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
