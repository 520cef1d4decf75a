"""Prometheus text exposition without ``*_created`` series, for one registry.

prometheus_client adds a ``_created`` sample to every counter and histogram; kube-scheduler's
exposition has none, and ``disable_created_metrics()`` is process-wide. This filters them out of one
registry's output instead.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class _WithoutCreated:
    def __init__(self, registry: Collector) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for metric in self._registry.collect():
            metric.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield metric


def render(registry: Collector, histograms: Sequence[FastHistograms] = ()) -> bytes:
    """The registry's metrics, then ``histograms``, in the text format, with no ``_created`` series."""
    return generate_latest(_WithoutCreated(registry)) + "".join(h.text() for h in histograms).encode()


def follow_runtime(registry: CollectorRegistry) -> None:
    """The process's families a Go component's dashboard expects, on ``registry``: process_* (CPU seconds,
    resident and virtual memory, start time, open and max fds, read from /proc as client_golang does),
    python_info and python_gc_* (Go's go_info and go_gc_*) and kubesched_asyncio_tasks (go_goroutines).

    prometheus_client registers the first three on its process-wide default registry only; kubesched's
    registries are per object, so each component adds them to its own here.
    """
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(_AsyncioTasks())


class _AsyncioTasks:
    """kubesched_asyncio_tasks: the tasks of the running event loop (none outside one: nothing reported)."""

    def collect(self) -> Iterator[Metric]:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        family = GaugeMetricFamily(
            "kubesched_asyncio_tasks", "Number of asyncio tasks that exist (not done) on the event loop."
        )
        family.add_metric([], len(asyncio.all_tasks(loop)))
        yield family


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """client_golang's ExponentialBuckets (each bound the previous times ``factor``, as Go computes them)."""
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return tuple(out)


class FastHistograms:
    """A histogram family for hot paths: an observation is a bisect and two list additions, no lock and no
    label formatting (labels are a tuple of values turned to strings only when scraped; ``label_text``
    maps each value, e.g. a status code, to its text). asyncio only: one thread observes.

    Rendered by ``text()`` straight to the exposition format, with each child's line prefixes built once:
    through prometheus_client's samples a scrape of the scheduler's per-plugin histograms (thousands of
    lines) took ~0.1-0.5 s of the event loop, validating and escaping every label of every line anew.
    """

    def __init__(self, name: str, documentation: str, labels: Sequence[str], buckets: Sequence[float]) -> None:
        self.name, self.documentation, self.labels = name, documentation, list(labels)
        self.bounds = list(buckets)
        self.children: dict[tuple[object, ...], list[float]] = {}
        self._les = [floatToGoString(b) for b in self.bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        self._prefixes: dict[tuple[object, ...], tuple[list[str], str, str]] = {}

    def observe(self, key: tuple[object, ...], value: float) -> None:
        child = self.children.get(key)
        if child is None:
            child = self.children[key] = [0.0] * (len(self.bounds) + 2)  # buckets, +Inf, then the sum
        child[bisect.bisect_left(self.bounds, value)] += 1
        child[-1] += value

    def label_text(self, key: tuple[object, ...]) -> list[str]:
        return [str(v) for v in key]

    def _prefixes_of(self, key: tuple[object, ...]) -> tuple[list[str], str, str]:
        found = self._prefixes.get(key)
        if found is None:
            pairs = ",".join(f'{n}="{_escape(v)}"' for n, v in zip(self.labels, self.label_text(key), strict=True))
            sep, braces = (pairs + ",", "{" + pairs + "}") if pairs else ("", "")
            buckets = [f'{self.name}_bucket{{{sep}le="{le}"}} ' for le in self._les]
            found = self._prefixes[key] = (buckets, f"{self.name}_count{braces} ", f"{self.name}_sum{braces} ")
        return found

    def text(self) -> str:
        """The family in the text exposition format (counts as integers, the sum as Go writes floats)."""
        doc = self.documentation.replace("\\", r"\\").replace("\n", r"\n")
        lines = [f"# HELP {self.name} {doc}\n# TYPE {self.name} histogram\n"]
        for key, child in list(self.children.items()):
            buckets, count, total = self._prefixes_of(key)
            cumulative = 0
            for prefix, n in zip(buckets, child, strict=False):  # child ends with the sum: one longer
                cumulative += int(n)
                lines.append(f"{prefix}{cumulative}\n")
            lines.append(f"{count}{cumulative}\n{total}{floatToGoString(child[-1])}\n")  # type: ignore[no-untyped-call]
        return "".join(lines)


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
