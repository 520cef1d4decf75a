"""Prometheus metrics of one extender server, in a registry of its own (no process-wide state)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubesched.cluster.ledger import Ledger
from kubesched.http.allocation import NodeAllocation
from kubesched.http.exposition import follow_runtime, render

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
        self._ledger: LedgerCollector | None = None
        follow_runtime(self.registry)

    def watch_ledger(self, ledger: Ledger, resources: Sequence[str]) -> None:
        """Report the ledger's reservations and each node's allocation of the managed ``resources`` (read at
        scrape time; the pods counted include the reservations)."""
        if self._ledger is None:
            self._ledger = LedgerCollector(ledger)
            self.registry.register(self._ledger)
            if resources:
                self.registry.register(NodeAllocation("kubesched_extender", lambda: ledger.cache.table, resources))

    def render(self) -> bytes:
        return render(self.registry)


class LedgerCollector(Collector):
    """Reads the ledger and the node table when scraped: nothing is paid per request."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def collect(self) -> Iterator[Metric]:
        led = self.ledger
        if led.entries:
            led.expire()
        yield GaugeMetricFamily(
            "kubesched_extender_reservations_held",
            "Pods the extender bound (or is binding) that the watch has not reported yet.",
            value=led.held,
        )
        for name, value, text in (
            ("reservations", led.reserved, "Pods reserved on a node by bind."),
            ("reservations_released", led.released, "Reservations released because the binding failed."),
            ("reservations_expired", led.expired, "Reservations dropped after the TTL without a watch report."),
            ("bind_refused", led.refused, "Binds answered Error because the pod no longer fit the node."),
        ):
            yield CounterMetricFamily(f"kubesched_extender_{name}", text, value=value)
