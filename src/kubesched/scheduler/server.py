"""The scheduler's HTTP face: /healthz and /livez, /readyz (200 once the cache has synced), /metrics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubesched.scheduler.metrics import SchedulerMetrics

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
_TEXT = [(b"content-type", b"text/plain; charset=utf-8")]


class SchedulerApp:
    """A bare ASGI app; ``ready`` says whether the cluster state has synced."""

    def __init__(self, metrics: SchedulerMetrics, ready: Callable[[], bool]) -> None:
        self.metrics = metrics
        self.ready = ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path in ("/healthz", "/livez"):
            await _reply(send, 200, b"ok", _TEXT)
        elif path == "/readyz":
            ok = self.ready()
            await _reply(send, 200 if ok else 503, b"ok" if ok else b"cluster state not synced yet", _TEXT)
        elif path == "/metrics":
            await _reply(send, 200, self.metrics.render(), [(b"content-type", b"text/plain; version=0.0.4")])
        else:
            await _reply(send, 404, f"unknown path {path!r}: try /healthz, /readyz or /metrics".encode(), _TEXT)


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
