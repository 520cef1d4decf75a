"""The webhook's routes, a `kubesched.http` handler as the extender's (kubesched.extender.app).

Routes: POST /validate, /mutate; GET /healthz, /readyz (200 once the nodes have synced), /metrics.
A malformed AdmissionReview gets a 400 whose text says what is wrong, a failing rule a 500 (the API
server then applies the failurePolicy); the server keeps serving either way. `kubesched webhook
serve` carries the routes on the lean server of `kubesched.http.server`; `WebhookApp` is the ASGI
face (tests, any ASGI server).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable

from kubesched.cluster.cache import ClusterCache
from kubesched.http.asgi import ASGIApp
from kubesched.http.handler import JSON, TEXT, Response, too_large_response
from kubesched.webhook.review import BadReview
from kubesched.webhook.rules import Phase
from kubesched.webhook.service import AdmissionService, RuleFailed

log = logging.getLogger("kubesched.webhook")


PATHS: dict[str, Phase] = {"/validate": "validate", "/mutate": "mutate"}
DEFAULT_MAX_BODY = 16 * 1024 * 1024


class WebhookRoutes:
    def __init__(self, service: AdmissionService, cache: ClusterCache, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.service = service
        self.cache = cache  # the nodes of the feasibility rules; synced at once when there are none
        self.max_body = max_body
        self.metrics = service.metrics

    def dispatch(self, method: str, path: str, body: bytes) -> Response | Awaitable[Response]:
        phase = PATHS.get(path)
        if phase is None:
            return self._other(path)
        if method != "POST":
            return 405, f"{path} takes POST, not {method}".encode(), TEXT
        return self._review(path, phase, body)

    def too_large(self, path: str) -> Response:
        response = too_large_response(self.max_body)
        if path in PATHS:
            self.metrics.requests.labels(path, "413").inc()
        return response

    def _other(self, path: str) -> Response:
        if path in ("/healthz", "/livez"):
            return 200, b"ok", TEXT
        if path == "/readyz":
            ready = self.cache.synced.is_set()
            return 200 if ready else 503, b"ok" if ready else b"nodes not synced yet", TEXT
        if path == "/metrics":
            self.metrics.nodes.set(len(self.cache.table))
            return 200, self.metrics.render(), b"text/plain; version=0.0.4"
        return 404, f"unknown path {path!r}: this webhook serves POST /validate, /mutate".encode(), TEXT

    async def _review(self, path: str, phase: Phase, body: bytes) -> Response:
        start = time.perf_counter()
        response = await self._serve(phase, body)
        self.metrics.requests.labels(path, str(response[0])).inc()
        self.metrics.latency.labels(path).observe(time.perf_counter() - start)
        return response

    async def _serve(self, phase: Phase, body: bytes) -> Response:
        try:
            return 200, await self.service.review(phase, body), JSON
        except BadReview as err:
            log.info("Bad request", extra={"phase": phase, "err": str(err)})
            return _status(400, "BadRequest", str(err))
        except RuleFailed as err:
            return _status(500, "InternalError", str(err))
        except Exception as err:
            log.exception("Review failed", extra={"phase": phase})
            return _status(500, "InternalError", f"internal error in {phase}: {type(err).__name__}: {err}")


def _status(code: int, reason: str, message: str) -> Response:
    """An error as a metav1.Status: the API server shows its message in the error it returns for the
    webhook call (any other body reaches users as "the server rejected our request for an unknown reason")."""
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason}
    return code, json.dumps({**status, "code": code}).encode(), JSON


class WebhookApp(ASGIApp):
    """The routes as an ASGI application."""

    def __init__(self, service: AdmissionService, cache: ClusterCache, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.routes = WebhookRoutes(service, cache, max_body=max_body)
        super().__init__(self.routes)
