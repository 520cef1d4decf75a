"""Prometheus metrics of one extender server, in a registry of its own (no process-wide state)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class ExtenderMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "kubesched_extender_requests",
            "Extender requests by verb and HTTP status code.",
            ["verb", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kubesched_extender_request_duration_seconds",
            "Time to answer an extender request, by verb.",
            ["verb"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.nodes = Gauge(
            "kubesched_extender_cached_nodes", "Nodes in the extender's node cache.", registry=self.registry
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
