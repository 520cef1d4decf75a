"""Prometheus metrics of one scheduler, named as kube-scheduler names them where they apply.

A registry per scheduler object: no process-wide state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kubesched.framework.status import Code
from kubesched.http.exposition import FastHistograms, exponential_buckets, follow_runtime, render

# Per profile: opportunistic batching's attempts by result and cache flushes by reason.
BatchCounts = Sequence[tuple[str, Mapping[str, int], Mapping[str, int]]]
# Per profile: how often each plugin was evaluated at each point ((plugin, point) -> count).
Evaluations = Iterable[tuple[str, Mapping[tuple[str, str], int]]]

# kube-scheduler's buckets (pkg/scheduler/metrics/metrics.go, v1.35.4 and v1.37.2 alike).
_ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)
_BATCH_BUCKETS = exponential_buckets(0.00001, 2, 12)
_SLI_BUCKETS = exponential_buckets(0.01, 2, 20)
_ATTEMPTS_BUCKETS = exponential_buckets(1, 2, 5)
_VICTIMS_BUCKETS = exponential_buckets(1, 2, 7)
_EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
_PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
# kube-scheduler's Code.String().
CODE_TEXT = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class _ByCode(FastHistograms):
    """Histograms keyed (..., Code, ...): the code is written as kube-scheduler writes it only when scraped."""

    def label_text(self, key: tuple[object, ...]) -> list[str]:
        return [CODE_TEXT[v] if isinstance(v, Code) else str(v) for v in key]


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
            " number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the"
            " scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the"
            " scheduler never attempted to schedule because they are gated.",
            ["queue"],
            registry=self.registry,
        )
        self.sli = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might"
            " involve multiple scheduling attempts.",
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
        self.pod_attempts = FastHistograms(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            [],
            _ATTEMPTS_BUCKETS,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=_VICTIMS_BUCKETS,
            registry=self.registry,
        )
        # Observed once per extension point per pod (``extension_points.observe((point, Code, profile), s)``):
        # a hand-made histogram, no lock and no label strings on the hot path.
        self.extension_points = _ByCode(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            _EXTENSION_POINT_BUCKETS,
        )
        self.plugin_durations = _ByCode(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            _PLUGIN_BUCKETS,
        )
        # Once per attempt: a hand-made histogram (prometheus_client's takes a lock per observation).
        self.algorithm = FastHistograms(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            [],
            _ATTEMPT_BUCKETS,
        )
        self.permit_wait = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"],
            buckets=_ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.after_flush = Counter(
            "scheduler_pod_scheduled_after_flush",
            "Number of pods that were successfully scheduled after being flushed from unschedulableEntities due to"
            " timeout. This metric helps detect potential queueing hint misconfigurations or event handling issues.",
            registry=self.registry,
        )
        self.event_handling = FastHistograms(
            "scheduler_event_handling_duration_seconds",
            "Event handling latency in seconds.",
            ["event"],
            _EXTENSION_POINT_BUCKETS,
        )
        self.queueing_hints = FastHistograms(
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ["plugin", "event", "hint"],
            _PLUGIN_BUCKETS,
        )
        self.node_hint = FastHistograms(
            "scheduler_get_node_hint_duration_seconds",
            "Latency for getting a node hint.",
            ["hinted", "profile"],
            _BATCH_BUCKETS,
        )
        self.store_results = FastHistograms(
            "scheduler_store_schedule_results_duration_seconds",
            "Latency for storing scheduling results.",
            ["profile"],
            _BATCH_BUCKETS,
        )
        self.rescore = FastHistograms(
            "scheduler_batch_rescore_duration_seconds",
            "Latency for rescoring a node during opportunistic batching.",
            ["profile"],
            _BATCH_BUCKETS,
        )
        follow_runtime(self.registry)
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

    def plugin(self, plugin: str, point: str, code: Code, seconds: float) -> None:
        """One plugin at one point, for the sampled pods (kube-scheduler: 10 % of the scheduling cycles)."""
        self.plugin_durations.observe((plugin, point, code), seconds)

    def plugin_error(self, profile: str, plugin: str, point: str) -> None:
        self.plugin_errors.labels(profile, plugin or "unknown", point or "unknown").inc()

    def scheduled(self, attempts: int, seconds: float) -> None:
        """A pod bound ``seconds`` after it entered the queue (the SLI), by attempts (15 and more: "15")."""
        label = min(attempts, 15)
        child = self._sli_children.get(label)
        if child is None:
            child = self._sli_children[label] = self.sli.labels(str(label))
        child.observe(seconds)
        self.pod_attempts.observe((), attempts)

    def batch_timing(self, family: str, key: tuple[str, ...], seconds: float) -> None:
        """Opportunistic batching's own timings: ``family`` "hint" (key (hinted, profile)), "store" or
        "rescore" (key (profile,)); a rescore counts in scheduler_batch_rescore_attempts_total too."""
        {"hint": self.node_hint, "store": self.store_results, "rescore": self.rescore}[family].observe(key, seconds)

    def follow_scheduler(
        self,
        cache: Callable[[], Mapping[str, int]],
        binding: Callable[[], int],
        in_flight: Callable[[], int],
        evaluations: Callable[[], Evaluations],
    ) -> None:
        """Where scheduler_cache_size (by type), scheduler_goroutines{operation="binding"} (binding cycles in
        flight), scheduler_inflight_events{event="PodPopped"} and scheduler_plugin_evaluation_total read."""
        self.registry.register(_StateCollector(cache, binding, in_flight, evaluations, self.rescore))

    def follow_batches(self, counts: Callable[[], BatchCounts]) -> None:
        """Where scheduler_batch_attempts_total and scheduler_batch_cache_flushed_total read at scrape time."""
        self.registry.register(_BatchCollector(counts))

    def follow_queue(
        self,
        pending: Callable[[], Mapping[str, int]],
        incoming: Mapping[tuple[str, str], int] | None = None,
        unschedulable: Callable[[], Mapping[tuple[str, str], int]] | None = None,
    ) -> None:
        """Where scheduler_pending_pods, scheduler_queue_incoming_pods_total (a live mapping of (queue, event)
        to pods) and scheduler_unschedulable_pods (by plugin and profile) read their values at scrape time."""
        self._pending_source = pending
        if incoming is not None and unschedulable is not None:
            self.registry.register(_QueueCollector(pending, incoming, unschedulable))

    def render(self) -> bytes:
        for queue, n in self._pending_source().items():
            self.pending.labels(queue).set(n)
        fast: tuple[FastHistograms, ...] = (
            self.pod_attempts,
            self.algorithm,
            self.extension_points,
            self.plugin_durations,
        )
        fast += (self.event_handling, self.queueing_hints, self.node_hint, self.store_results, self.rescore)
        return render(self.registry, fast)


class _QueueCollector:
    """The queue's counts, read when scraped: the queue pays a dict addition per placement."""

    def __init__(
        self,
        pending: Callable[[], Mapping[str, int]],
        incoming: Mapping[tuple[str, str], int],
        unschedulable: Callable[[], Mapping[tuple[str, str], int]],
    ) -> None:
        self._pending, self._incoming, self._unschedulable = pending, incoming, unschedulable

    def collect(self) -> Iterator[Metric]:
        incoming = CounterMetricFamily(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            labels=["queue", "event"],
        )
        entities = CounterMetricFamily(
            "scheduler_queue_incoming_entities",
            "Number of scheduling entities added to scheduling queues by event, queue type, and entity type. Entity"
            " types are either 'pod' (for individual pods that are not members of any podgroup) or 'podgroup'.",
            labels=["queue", "event", "type"],
        )
        for (queue, event), n in list(self._incoming.items()):
            incoming.add_metric([queue, event], n)
            entities.add_metric([queue, event, "pod"], n)  # no pod groups yet: every entity is a pod
        yield incoming
        yield entities
        queued = GaugeMetricFamily(
            "scheduler_queued_entities",
            "Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for individual pods that are not"
            " members of any podgroup) by the queue type. 'active' means number of entities in activeQ; 'backoff'"
            " means number of entities in backoffQ; 'unschedulable' means number of entities in unschedulableEntities"
            " that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable entities"
            " that the scheduler never attempted to schedule because they are gated.",
            labels=["queue", "type"],
        )
        for queue, n in self._pending().items():
            queued.add_metric([queue, "pod"], n)
        yield queued
        unschedulable = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all"
            " plugins that caused it to not schedule and so this metric have meaning only when broken down by"
            " plugin.",
            labels=["plugin", "profile"],
        )
        for (plugin, profile), n in sorted(self._unschedulable().items()):
            unschedulable.add_metric([plugin, profile], n)
        yield unschedulable


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


class _StateCollector:
    """What the scheduler holds right now, read when scraped: the cache, the binding cycles, the pods in
    flight, the plugins' evaluation counts (kept by each profile's framework) and batching's rescores."""

    def __init__(
        self,
        cache: Callable[[], Mapping[str, int]],
        binding: Callable[[], int],
        in_flight: Callable[[], int],
        evaluations: Callable[[], Evaluations],
        rescore: FastHistograms,
    ) -> None:
        self._cache, self._binding, self._in_flight = cache, binding, in_flight
        self._evaluations, self._rescore = evaluations, rescore

    def collect(self) -> Iterator[Metric]:
        size = GaugeMetricFamily(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            labels=["type"],
        )
        for kind, n in self._cache().items():
            size.add_metric([kind], n)
        yield size
        goroutines = GaugeMetricFamily(
            "scheduler_goroutines",
            "Number of running goroutines split by the work they do such as binding.",
            labels=["operation"],
        )
        goroutines.add_metric(["binding"], self._binding())  # asyncio tasks here: the binding cycles in flight
        yield goroutines
        inflight = GaugeMetricFamily(
            "scheduler_inflight_events", "Number of events currently tracked in the scheduling queue.", labels=["event"]
        )
        inflight.add_metric(["PodPopped"], self._in_flight())
        yield inflight
        evaluated = CounterMetricFamily(
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point (available only in"
            " PreFilter, Filter, PreScore, and Score).",
            labels=["plugin", "extension_point", "profile"],
        )
        for profile, counts in self._evaluations():
            for (plugin, point), n in list(counts.items()):
                evaluated.add_metric([plugin, point, profile], n)
        yield evaluated
        rescores = CounterMetricFamily(
            "scheduler_batch_rescore_attempts",
            "Counts of rescore attempts during opportunistic batching.",
            labels=["profile"],
        )
        for key, child in list(self._rescore.children.items()):
            rescores.add_metric([str(key[0])], sum(child[:-1]))  # every observation is one attempt
        yield rescores
