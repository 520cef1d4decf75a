"""Prometheus metrics of one webhook server, in a registry of its own (no process-wide state)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kubesched.core.nodetable import NodeTable
from kubesched.http.allocation import NodeAllocation
from kubesched.http.exposition import follow_runtime, render

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class WebhookMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "kubesched_webhook_requests",
            "Admission requests by path and HTTP status code.",
            ["path", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kubesched_webhook_request_duration_seconds",
            "Time to answer an admission request, by path.",
            ["path"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.verdicts = Counter(
            "kubesched_webhook_rule_verdicts",
            "Pods a rule denied, warned about or mutated.",
            ["rule", "verdict"],
            registry=self.registry,
        )
        self.nodes = Gauge("kubesched_webhook_nodes", "Nodes known to the feasibility rules.", registry=self.registry)
        follow_runtime(self.registry)

    def follow_allocation(self, table: Callable[[], NodeTable], resources: Sequence[str], requested: bool) -> None:
        """Export each node's allocatable (and, when ``table`` counts pods, requested) managed ``resources``."""
        if resources:
            self.registry.register(NodeAllocation("kubesched_webhook", table, resources, requested=requested))

    def render(self) -> bytes:
        return render(self.registry)
