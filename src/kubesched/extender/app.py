"""The extender's routes, independent of the HTTP server that carries them.

Routes, under an optional prefix: POST /filter, /prioritize, /bind, /preempt; GET /healthz,
/readyz (200 only once the node cache has synced), /metrics. Bad input gets a 4xx whose text says
what is wrong; an unexpected failure gets a 500 with its message and is logged; the server keeps
serving either way.

`Dispatcher.dispatch` answers filter, prioritize and preempt synchronously (pure CPU work) and
returns an awaitable only for bind, which calls the API server. It is a `kubesched.http` handler:
the lean HTTP/1.1 server of `kubesched.http.server` carries it (what `kubesched extender serve`
runs), or the ASGI adapter `ExtenderApp` below (tests, and any ASGI server).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from kubesched.extender.metrics import ExtenderMetrics
from kubesched.extender.service import BadRequest, ExtenderService, NotReady
from kubesched.http.asgi import ASGIApp
from kubesched.http.handler import JSON, TEXT, Response, too_large_response

log = logging.getLogger("kubesched.extender")

VERBS = ("filter", "prioritize", "bind", "preempt")
DEFAULT_MAX_BODY = 256 * 1024 * 1024


class Dispatcher:
    """Maps a request to the service and its answer to a status, a body and a content type."""

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
        self.metrics.watch_ledger(service.ledger, [r.name for r in service.policy.managed_resources])
        self._verbs = {f"{self.prefix}/{v}": v for v in VERBS}
        self._sync: dict[str, Callable[[bytes], bytes]] = {
            "filter": service.filter,
            "prioritize": service.prioritize,
            "preempt": service.preempt,
        }
        self._observers = {
            v: (
                self.metrics.latency.labels(v),
                {c: self.metrics.requests.labels(v, str(c)) for c in (200, 400, 500, 503)},
            )
            for v in VERBS
        }

    def too_large(self, path: str) -> Response:
        verb = self._verbs.get(path)
        if verb is not None:
            self.metrics.requests.labels(verb, "413").inc()
        return too_large_response(self.max_body)

    def dispatch(self, method: str, path: str, body: bytes) -> Response | Awaitable[Response]:
        verb = self._verbs.get(path)
        if verb is None:
            return self._other(method, path)
        if method != "POST":
            return 405, f"{verb} takes POST, not {method}".encode(), TEXT
        start = time.perf_counter()
        if not body:
            return self._observe(verb, start, (400, f"empty request body: {verb} takes a JSON object".encode(), TEXT))
        handler = self._sync.get(verb)
        if handler is None:
            return self._bind(body, start)
        try:
            out = handler(body)
        except BadRequest as err:
            log.info("Bad request", extra={"verb": verb, "err": str(err)})
            return self._observe(verb, start, (400, str(err).encode(), TEXT))
        except NotReady as err:  # before the first sync: prioritize failures are ignored, preempt fails the attempt
            return self._observe(verb, start, (503, str(err).encode(), TEXT))
        except Exception as err:
            log.exception("Request failed", extra={"verb": verb})
            return self._observe(
                verb, start, (500, f"internal error in {verb}: {type(err).__name__}: {err}".encode(), TEXT)
            )
        return self._observe(verb, start, (200, out, JSON))

    async def _bind(self, body: bytes, start: float) -> Response:
        try:
            out = await self.service.bind(body)
        except BadRequest as err:
            log.info("Bad request", extra={"verb": "bind", "err": str(err)})
            return self._observe("bind", start, (400, str(err).encode(), TEXT))
        except Exception as err:
            log.exception("Request failed", extra={"verb": "bind"})
            return self._observe(
                "bind", start, (500, f"internal error in bind: {type(err).__name__}: {err}".encode(), TEXT)
            )
        return self._observe("bind", start, (200, out, JSON))

    def _observe(self, verb: str, start: float, response: Response) -> Response:
        latency, counters = self._observers[verb]
        counter = counters.get(response[0])
        (counter or self.metrics.requests.labels(verb, str(response[0]))).inc()
        latency.observe(time.perf_counter() - start)
        return response

    def _other(self, method: str, path: str) -> Response:
        if path in ("/healthz", "/livez"):
            return 200, b"ok", TEXT
        if path == "/readyz":
            if self.service.cache.synced.is_set():
                return 200, b"ok", TEXT
            return 503, b"node cache not synced yet", TEXT
        if path == "/metrics":
            self.metrics.nodes.set(len(self.service.cache.table))
            return 200, self.metrics.render(), b"text/plain; version=0.0.4"
        served = ", ".join(self._verbs)
        return 404, f"unknown path {path!r}: this extender serves POST {served}".encode(), TEXT


class ExtenderApp(ASGIApp):
    """The dispatcher as an ASGI application."""

    def __init__(
        self,
        service: ExtenderService,
        *,
        prefix: str = "",
        max_body: int = DEFAULT_MAX_BODY,
        metrics: ExtenderMetrics | None = None,
    ) -> None:
        self.dispatcher = Dispatcher(service, prefix=prefix, max_body=max_body, metrics=metrics)
        super().__init__(self.dispatcher)
