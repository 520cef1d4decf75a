"""The webhook's HTTP face: a bare ASGI app, as the extender's (kubesched.extender.app).

Routes: POST /validate, /mutate; GET /healthz, /readyz (200 once the nodes have synced), /metrics.
A malformed AdmissionReview gets a 400 whose text says what is wrong, a failing rule a 500 (the API
server then applies the failurePolicy); the server keeps serving either way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kubesched.cluster.cache import ClusterCache
from kubesched.webhook.review import BadReview
from kubesched.webhook.rules import Phase
from kubesched.webhook.service import AdmissionService, RuleFailed

log = logging.getLogger("kubesched.webhook")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

PATHS: dict[str, Phase] = {"/validate": "validate", "/mutate": "mutate"}
DEFAULT_MAX_BODY = 16 * 1024 * 1024
_JSON = [(b"content-type", b"application/json")]
_TEXT = [(b"content-type", b"text/plain; charset=utf-8")]


class TooLarge(Exception):
    pass


class WebhookApp:
    def __init__(self, service: AdmissionService, cache: ClusterCache, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.service = service
        self.cache = cache  # the nodes of the feasibility rules; synced at once when there are none
        self.max_body = max_body
        self.metrics = service.metrics

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
            ready = self.cache.synced.is_set()
            return await _reply(send, 200 if ready else 503, b"ok" if ready else b"nodes not synced yet", _TEXT)
        if path == "/metrics":
            self.metrics.nodes.set(len(self.cache.table))
            return await _reply(send, 200, self.metrics.render(), [(b"content-type", b"text/plain; version=0.0.4")])
        phase = PATHS.get(path)
        if phase is None:
            served = "this webhook serves POST /validate, /mutate"
            return await _reply(send, 404, f"unknown path {path!r}: {served}".encode(), _TEXT)
        if method != "POST":
            return await _reply(send, 405, f"{path} takes POST, not {method}".encode(), _TEXT)
        start = time.perf_counter()
        status, body, headers = await self._serve(phase, scope, receive)
        await _reply(send, status, body, headers)
        self.metrics.requests.labels(path, str(status)).inc()
        self.metrics.latency.labels(path).observe(time.perf_counter() - start)

    async def _serve(self, phase: Phase, scope: Scope, receive: Receive) -> tuple[int, bytes, Headers]:
        try:
            body = await self._body(scope, receive)
        except TooLarge:
            return 413, f"request body over the limit of {self.max_body} bytes (--max-body-bytes)".encode(), _TEXT
        try:
            return 200, await self.service.review(phase, body), _JSON
        except BadReview as err:
            log.info("%s: bad request: %s", phase, err)
            return 400, str(err).encode(), _TEXT
        except RuleFailed as err:
            return 500, str(err).encode(), _TEXT
        except Exception as err:
            log.exception("%s failed", phase)
            return 500, f"internal error in {phase}: {type(err).__name__}: {err}".encode(), _TEXT

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        # The same reader as the extender's: the two shells may not import each other (lint-imports).
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
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _reply(send: Send, status: int, body: bytes, headers: Headers) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
