"""The scheduler's health and metrics endpoints on the shared HTTP server (with its limits)."""

from __future__ import annotations

import asyncio

import httpx

from kubesched.http.server import HTTPServer, Limits
from kubesched.scheduler.metrics import SchedulerMetrics
from kubesched.scheduler.server import SchedulerRoutes


async def test_health_readiness_metrics_and_limits() -> None:
    synced = False
    server = HTTPServer(
        SchedulerRoutes(SchedulerMetrics(), lambda: synced), "127.0.0.1", 0, limits=Limits(max_header_bytes=4096)
    )
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.bound_port}") as http:
            assert (await http.get("/healthz")).text == "ok"
            assert (await http.get("/readyz")).status_code == 503
            synced = True
            assert (await http.get("/readyz")).status_code == 200
            metrics = await http.get("/metrics")
            assert "scheduler_schedule_attempts_total" in metrics.text
            assert (await http.post("/healthz", content=b"x")).status_code in (405, 413)
            assert (await http.get("/nope")).status_code == 404
            head = await http.head("/healthz")
            assert head.status_code == 200 and head.content == b""
            assert (await http.get("/healthz")).text == "ok"  # the connection after HEAD is intact
            assert (await http.get("/healthz", headers={"x-big": "a" * 8192})).status_code == 431
    finally:
        await asyncio.wait_for(server.shutdown(grace=1.0), 5)
