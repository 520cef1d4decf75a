"""The scheduler's HTTP face: /healthz and /livez, /readyz (200 once the cache has synced), /metrics.

A `kubesched.http` handler, carried by the same lean server as the extender and the webhook, with the
same limits (header size, read and idle timeouts, connection cap).
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.http.handler import TEXT, Response, too_large_response
from kubesched.scheduler.metrics import SchedulerMetrics

_PROMETHEUS = b"text/plain; version=0.0.4"


class SchedulerRoutes:
    """``ready`` says whether the cluster state has synced. No route takes a body."""

    max_body = 0

    def __init__(self, metrics: SchedulerMetrics, ready: Callable[[], bool]) -> None:
        self.metrics = metrics
        self.ready = ready

    def dispatch(self, method: str, path: str, body: bytes) -> Response:
        if method not in ("GET", "HEAD"):
            return 405, f"{path} takes GET, not {method}".encode(), TEXT
        if path in ("/healthz", "/livez"):
            return 200, b"ok", TEXT
        if path == "/readyz":
            ok = self.ready()
            return (200, b"ok", TEXT) if ok else (503, b"cluster state not synced yet", TEXT)
        if path == "/metrics":
            return 200, self.metrics.render(), _PROMETHEUS
        return 404, f"unknown path {path!r}: try /healthz, /readyz or /metrics".encode(), TEXT

    def too_large(self, path: str) -> Response:
        return too_large_response(self.max_body)
