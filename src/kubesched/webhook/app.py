"""The webhook's HTTP face: a bare ASGI app, as the extender's (kubesched.extender.app).

Routes: POST /validate, /mutate; GET /healthz, /readyz (200 once the nodes have synced), /metrics.
A malformed AdmissionReview gets a 400 whose text says what is wrong, a failing rule a 500 (the API
server then applies the failurePolicy); the server keeps serving either way.
"""

from __future__ import annotations

import logging
import time

from kubesched.asgi import Receive, Scope, Send, TooLarge, lifespan, read_body, reply
from kubesched.cluster.cache import ClusterCache
from kubesched.webhook.review import BadReview
from kubesched.webhook.rules import Phase
from kubesched.webhook.service import AdmissionService, RuleFailed

log = logging.getLogger("kubesched.webhook")


PATHS: dict[str, Phase] = {"/validate": "validate", "/mutate": "mutate"}
DEFAULT_MAX_BODY = 16 * 1024 * 1024
_JSON = b"application/json"
_TEXT = b"text/plain; charset=utf-8"


class WebhookApp:
    def __init__(self, service: AdmissionService, cache: ClusterCache, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.service = service
        self.cache = cache  # the nodes of the feasibility rules; synced at once when there are none
        self.max_body = max_body
        self.metrics = service.metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path in ("/healthz", "/livez"):
            return await reply(send, 200, b"ok", _TEXT)
        if path == "/readyz":
            ready = self.cache.synced.is_set()
            return await reply(send, 200 if ready else 503, b"ok" if ready else b"nodes not synced yet", _TEXT)
        if path == "/metrics":
            self.metrics.nodes.set(len(self.cache.table))
            return await reply(send, 200, self.metrics.render(), b"text/plain; version=0.0.4")
        phase = PATHS.get(path)
        if phase is None:
            served = "this webhook serves POST /validate, /mutate"
            return await reply(send, 404, f"unknown path {path!r}: {served}".encode(), _TEXT)
        if method != "POST":
            return await reply(send, 405, f"{path} takes POST, not {method}".encode(), _TEXT)
        start = time.perf_counter()
        status, body, headers = await self._serve(phase, scope, receive)
        await reply(send, status, body, headers)
        self.metrics.requests.labels(path, str(status)).inc()
        self.metrics.latency.labels(path).observe(time.perf_counter() - start)

    async def _serve(self, phase: Phase, scope: Scope, receive: Receive) -> tuple[int, bytes, bytes]:
        try:
            body = await read_body(scope, receive, self.max_body)
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
