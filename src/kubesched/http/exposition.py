"""Prometheus text exposition without ``*_created`` series, for one registry.

prometheus_client adds a ``_created`` sample to every counter and histogram; kube-scheduler's
exposition has none, and ``disable_created_metrics()`` is process-wide. This filters them out of one
registry's output instead.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence

from prometheus_client import generate_latest
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class _WithoutCreated:
    def __init__(self, registry: Collector) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for metric in self._registry.collect():
            metric.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield metric


def render(registry: Collector) -> bytes:
    """The registry's metrics in the text format, with no ``_created`` series."""
    return generate_latest(_WithoutCreated(registry))


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """client_golang's ExponentialBuckets (each bound the previous times ``factor``, as Go computes them)."""
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return tuple(out)


class FastHistograms(Collector):
    """A histogram family for hot paths: an observation is a bisect and two list additions, no lock and no
    label formatting (labels are a tuple of values turned to strings only when scraped; ``label_text``
    maps each value, e.g. a status code, to its text). asyncio only: one thread observes."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str], buckets: Sequence[float]) -> None:
        self.name, self.documentation, self.labels = name, documentation, list(labels)
        self.bounds = list(buckets)
        self.children: dict[tuple[object, ...], list[float]] = {}

    def observe(self, key: tuple[object, ...], value: float) -> None:
        child = self.children.get(key)
        if child is None:
            child = self.children[key] = [0.0] * (len(self.bounds) + 2)  # buckets, +Inf, then the sum
        child[bisect.bisect_left(self.bounds, value)] += 1
        child[-1] += value

    def label_text(self, key: tuple[object, ...]) -> list[str]:
        return [str(v) for v in key]

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        les = [floatToGoString(b) for b in self.bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        for key, child in list(self.children.items()):
            cumulative, buckets = 0.0, []
            for le, n in zip(les, child[:-1], strict=True):
                cumulative += n
                buckets.append((le, cumulative))
            family.add_metric(self.label_text(key), buckets, child[-1])
        yield family
