"""Prometheus metrics of one scheduler, named as kube-scheduler names them where they apply.

A registry per scheduler object: no process-wide state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric

# Per profile: opportunistic batching's attempts by result and cache flushes by reason.
BatchCounts = Sequence[tuple[str, Mapping[str, int], Mapping[str, int]]]

# kube-scheduler's buckets: exponential from 1 ms (attempt duration) and from 10 ms (SLI).
_ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
_SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))


class SchedulerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled,"
            " while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=_ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.pending = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means"
            " number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods;"
            " 'gated' means number of pods gated by a PreEnqueue plugin.",
            ["queue"],
            registry=self.registry,
        )
        self.sli = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue until it is"
            " bound, by the number of attempts.",
            ["attempts"],
            buckets=_SLI_BUCKETS,
            registry=self.registry,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts", "Total preemption attempts in the cluster till now", registry=self.registry
        )
        self.reloads = Counter(
            "kubesched_scheduler_config_reloads",
            "Configuration reloads while running, by result (applied or refused).",
            ["result"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "kubesched_scheduler_is_leader",
            "1 while this replica holds the lease (or runs without election).",
            registry=self.registry,
        )
        # No exact kube-scheduler equivalent (its scheduler_plugin_execution_duration_seconds{status="Error"}
        # is sampled): every plugin error that failed an attempt, raised or returned, by plugin and point.
        self.plugin_errors = Counter(
            "kubesched_scheduler_plugin_errors",
            "Plugin errors (an exception raised or an Error status returned) that failed a pod's attempt, by"
            " profile, plugin and extension point.",
            ["profile", "plugin", "extension_point"],
            registry=self.registry,
        )
        self.master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master."
            " 'name' is the string used to identify the lease.",
            ["name"],
            registry=self.registry,
        )
        self._pending_source: Callable[[], Mapping[str, int]] = dict
        # Labelled children, looked up once per label set (``labels()`` parses and locks on every call).
        # A child stays in its metric for good, so a cached one is the very child ``labels()`` returns.
        self._attempt_children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self._sli_children: dict[int, Histogram] = {}

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt: scheduler_schedule_attempts and its duration."""
        children = self._attempt_children.get((result, profile))
        if children is None:
            children = (self.attempts.labels(result, profile), self.attempt_duration.labels(result, profile))
            self._attempt_children[(result, profile)] = children
        children[0].inc()
        children[1].observe(seconds)

    def plugin_error(self, profile: str, plugin: str, point: str) -> None:
        self.plugin_errors.labels(profile, plugin or "unknown", point or "unknown").inc()

    def scheduled(self, attempts: int, seconds: float) -> None:
        """A pod bound ``seconds`` after it entered the queue (the SLI), by attempts (15 and more: "15")."""
        attempts = min(attempts, 15)
        child = self._sli_children.get(attempts)
        if child is None:
            child = self._sli_children[attempts] = self.sli.labels(str(attempts))
        child.observe(seconds)

    def follow_batches(self, counts: Callable[[], BatchCounts]) -> None:
        """Where scheduler_batch_attempts_total and scheduler_batch_cache_flushed_total read at scrape time."""
        self.registry.register(_BatchCollector(counts))

    def follow_queue(self, pending: Callable[[], Mapping[str, int]]) -> None:
        """Where scheduler_pending_pods reads its values at scrape time."""
        self._pending_source = pending

    def render(self) -> bytes:
        for queue, n in self._pending_source().items():
            self.pending.labels(queue).set(n)
        return generate_latest(self.registry)


class _BatchCollector:
    """kube-scheduler's opportunistic batching counters, read from the batch states when scraped."""

    def __init__(self, counts: Callable[[], BatchCounts]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        attempts = CounterMetricFamily(
            "scheduler_batch_attempts",
            "Counts of results when we attempt to use batching.",
            labels=["profile", "result"],
        )
        flushes = CounterMetricFamily(
            "scheduler_batch_cache_flushed", "Counts of cache flushes by reason.", labels=["profile", "reason"]
        )
        for profile, by_result, by_reason in self._counts():
            for result, n in by_result.items():
                attempts.add_metric([profile, result], n)
            for reason, n in by_reason.items():
                flushes.add_metric([profile, reason], n)
        yield attempts
        yield flushes
