"""The families kube-scheduler v1.37.2 registers beyond v1.35.4's, and the process and runtime families, moved by
the code paths that feed them (the engine, the queue, batching, the binding cycle, the plugins)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import SchedulerConfiguration, parse
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import CycleState, Handle, PermitPlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.engine.queue import UNSCHEDULABLE_TIMEOUT, ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.metrics import SchedulerMetrics
from kubesched.scheduler.profiles.manager import Built, build, build_default, load, load_registry
from kubesched.testing.builders import make_node, make_pod, make_pod_object
from kubesched.versions import parse_release

Samples = dict[str, list[tuple[dict[str, str], float]]]


def _exp(start: float, factor: float, count: int) -> list[float]:
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return out


# pkg/scheduler/metrics/metrics.go at v1.37.2 (registered whatever the feature gates): (type, labels, buckets).
# Families without labels are exposed under their counter name without `_total` by the parser.
UPSTREAM_V137 = {
    "scheduler_scheduling_algorithm_duration_seconds": ("histogram", set(), _exp(0.001, 2, 15)),
    "scheduler_event_handling_duration_seconds": ("histogram", {"event"}, _exp(0.0001, 2, 12)),
    "scheduler_queued_entities": ("gauge", {"queue", "type"}, None),
    "scheduler_inflight_events": ("gauge", {"event"}, None),
    "scheduler_goroutines": ("gauge", {"operation"}, None),
    "scheduler_pod_scheduled_after_flush": ("counter", set(), None),
    "scheduler_queue_incoming_entities": ("counter", {"queue", "event", "type"}, None),
    "scheduler_permit_wait_duration_seconds": ("histogram", {"result"}, _exp(0.001, 2, 15)),
    "scheduler_cache_size": ("gauge", {"type"}, None),
    "scheduler_plugin_evaluation": ("counter", {"plugin", "extension_point", "profile"}, None),
    "scheduler_batch_rescore_attempts": ("counter", {"profile"}, None),
    "scheduler_batch_rescore_duration_seconds": ("histogram", {"profile"}, _exp(0.00001, 2, 12)),
    "scheduler_get_node_hint_duration_seconds": ("histogram", {"hinted", "profile"}, _exp(0.00001, 2, 12)),
    "scheduler_store_schedule_results_duration_seconds": ("histogram", {"profile"}, _exp(0.00001, 2, 12)),
    "scheduler_queueing_hint_execution_duration_seconds": (
        "histogram",
        {"plugin", "event", "hint"},
        _exp(0.00001, 1.5, 20),
    ),
}
PROFILE = "default-scheduler"


def _samples(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def _value(samples: Samples, name: str, **labels: str) -> float:
    return sum(v for lab, v in samples.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


class HoldAtPermit(PermitPlugin):
    """Holds every pod at Permit for 50 ms; the pod's binding cycle waits, then is rejected by the timeout."""

    name: ClassVar[str] = "HoldAtPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return Status(Code.WAIT), 0.05


async def _batched_run() -> Scheduler:
    """20 small pods on 6 nodes (batching hints and rescoring), one that never fits, one more node added."""
    nodes = [make_node(f"n{i}", alloc={"cpu": "8", "pods": "110"}) for i in range(6)]
    pods = [make_pod_object(f"p{i}", namespace="ns", uid="", requests={"cpu": "100m"}) for i in range(20)]
    pods.append(make_pod_object("huge", namespace="ns", uid="", requests={"cpu": "64"}))
    cluster = MemoryCluster(nodes, pods)
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock, metrics=SchedulerMetrics())
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    scheduler.node_upserted(make_node("late", alloc={"cpu": "1", "pods": "110"}))  # asks huge's hints again
    await run_until_settled(scheduler, clock)
    return scheduler


async def test_the_v137_families_as_upstream_defines_them() -> None:
    scheduler = await _batched_run()
    text = scheduler.metrics.render().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name, (kind, labels, buckets) in UPSTREAM_V137.items():
        family = families.get(name)
        assert family is not None, name
        assert family.type == kind, name
        if name == "scheduler_permit_wait_duration_seconds":
            continue  # no Permit plugin waits in this run: its series come in the test below
        assert family.samples, f"{name} has no series after the run"
        for s in family.samples:
            assert set(s.labels) - {"le"} == labels, (name, s.labels)
        if buckets is not None:
            les = sorted({float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")})
            assert les == [*buckets, float("inf")], name
    assert "_created" not in text


async def test_the_v137_families_move_through_a_run() -> None:
    scheduler = await _batched_run()
    s = _samples(scheduler.metrics.render().decode())
    # One algorithm run per attempt: 20 pods placed, "huge" tried once (the late node does not help it).
    attempts = _value(s, "scheduler_schedule_attempts_total")
    assert attempts == 21
    assert _value(s, "scheduler_scheduling_algorithm_duration_seconds_count") == attempts
    # Events, under kube-scheduler's labels: the pods as they came, the late node (the in-memory cluster
    # echoes no binding: AssignedPodAdd is the integration test's).
    ev = "scheduler_event_handling_duration_seconds_count"
    assert _value(s, ev, event="UnscheduledPodAdd") == 21
    assert _value(s, ev, event="NodeAdd") == 1
    # The queue, in entities (every entity a pod) as in pods.
    assert _value(s, "scheduler_queued_entities", queue="unschedulable", type="pod") == 1
    assert _value(s, "scheduler_queued_entities", queue="active", type="pod") == 0
    incoming = "scheduler_queue_incoming_entities_total"
    assert _value(s, incoming, queue="active", event="UnscheduledPodAdd", type="pod") == 21
    assert _value(s, incoming, type="pod") == _value(s, "scheduler_queue_incoming_pods_total")
    assert _value(s, "scheduler_inflight_events", event="PodPopped") == 0  # settled: nothing in flight
    assert _value(s, "scheduler_goroutines", operation="binding") == 0
    assert _value(s, "scheduler_cache_size", type="nodes") == 7
    assert _value(s, "scheduler_cache_size", type="pods") == 20
    assert _value(s, "scheduler_cache_size", type="assumed_pods") == 0
    # Batching: a hint for most pods, a rescore of the node chosen last while it still fits, every store timed.
    hinted = _value(s, "scheduler_batch_attempts_total", result="hint_used")
    assert hinted > 0, "the run never used batching: the test proves nothing"
    assert _value(s, "scheduler_get_node_hint_duration_seconds_count", hinted="hint", profile=PROFILE) >= hinted
    assert _value(s, "scheduler_get_node_hint_duration_seconds_count", hinted="no_hint", profile=PROFILE) >= 1
    rescores = _value(s, "scheduler_batch_rescore_attempts_total", profile=PROFILE)
    assert rescores >= 1
    assert _value(s, "scheduler_batch_rescore_duration_seconds_count", profile=PROFILE) == rescores
    assert _value(s, "scheduler_store_schedule_results_duration_seconds_count", profile=PROFILE) == 20
    # The late node's NodeAdd asked NodeResourcesFit's hint about "huge": 1 CPU does not help it.
    qh = "scheduler_queueing_hint_execution_duration_seconds_count"
    assert _value(s, qh, plugin="NodeResourcesFit", event="NodeAdd", hint="QueueSkip") >= 1
    # Plugins evaluated: PreFilter once per full attempt, Filter and Score once per node they saw.
    ev_total = "scheduler_plugin_evaluation_total"
    pre_filter = _value(s, ev_total, plugin="NodeAffinity", extension_point="PreFilter", profile=PROFILE)
    assert pre_filter == attempts
    assert _value(s, ev_total, plugin="NodeResourcesFit", extension_point="Filter", profile=PROFILE) >= attempts
    assert _value(s, ev_total, plugin="NodeResourcesFit", extension_point="Score", profile=PROFILE) >= 6
    assert _value(s, ev_total, plugin="TaintToleration", extension_point="Filter", profile=PROFILE) >= attempts
    # Registered at zero, as upstream: a plugin PreFilter skipped was not evaluated at Filter.
    assert ({"plugin": "VolumeZone", "extension_point": "Filter", "profile": PROFILE}, 0.0) in s[ev_total]


async def test_a_pod_flushed_from_the_pool_by_the_timeout_counts_when_scheduled() -> None:
    cluster = MemoryCluster(
        [make_node("small", alloc={"cpu": "1", "pods": "10"})],
        [make_pod_object("p", namespace="ns", uid="", requests={"cpu": "2"})],
    )
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock, metrics=SchedulerMetrics())
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    assert scheduler.queue.pending()["unschedulable"] == 1
    # The node grows behind the scheduler's back (no event): only the 5-minute flush can bring the pod back.
    scheduler.cache.upsert_node(make_node("small", alloc={"cpu": "4", "pods": "10"}))
    before = _value(_samples(scheduler.metrics.render().decode()), "scheduler_pod_scheduled_after_flush_total")
    assert before == 0
    clock.advance(UNSCHEDULABLE_TIMEOUT + 1)
    await run_until_settled(scheduler, clock)
    s = _samples(scheduler.metrics.render().decode())
    assert [p.spec.node_name for p in cluster.pods.values()] == ["small"]
    assert _value(s, "scheduler_pod_scheduled_after_flush_total") == 1
    assert _value(s, "scheduler_queue_incoming_pods_total", queue="active", event="UnschedulableTimeout") == 1


async def test_a_wait_at_permit_is_timed_with_its_result() -> None:
    config = parse(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": PROFILE, "plugins": {"permit": {"enabled": [{"name": "HoldAtPermit"}]}}}],
        }
    )

    def make(mk: Callable[[str], Handle]) -> Built:
        registry, _ = load_registry((), lambda: [])
        registry.register(HoldAtPermit, "test")
        return build(config, registry, mk)

    node = msgspec.convert({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}}, Node)
    cluster = MemoryCluster([node], [make_pod("p", requests={"cpu": "1"}).pod])
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, make, clock=clock, metrics=SchedulerMetrics())
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock, max_cycles=1)
    s = _samples(scheduler.metrics.render().decode())
    assert _value(s, "scheduler_permit_wait_duration_seconds_count", result="Unschedulable") == 1
    assert _value(s, "scheduler_permit_wait_duration_seconds_sum", result="Unschedulable") >= 0.05
    les = sorted(float(lab["le"]) for lab, _ in s["scheduler_permit_wait_duration_seconds_bucket"])
    assert les == [*_exp(0.001, 2, 15), float("inf")]


@pytest.mark.parametrize(
    "family",
    [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "process_max_fds",
    ],
)
async def test_process_families_as_client_golang_names_them(family: str) -> None:
    s = _samples(SchedulerMetrics().render().decode())
    assert family in s, family
    assert s[family][0][1] > 0


async def test_runtime_families_stand_in_for_gos() -> None:
    text = SchedulerMetrics().render().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["python_info"].type == "gauge"
    assert {s.labels["implementation"] for s in families["python_info"].samples} == {"CPython"}
    for gc_family in ("python_gc_objects_collected", "python_gc_objects_uncollectable", "python_gc_collections"):
        assert families[gc_family].type == "counter"
        assert {s.labels["generation"] for s in families[gc_family].samples} == {"0", "1", "2"}
    tasks = families["kubesched_asyncio_tasks"]
    assert tasks.type == "gauge"
    assert tasks.samples[0].value >= 1  # this test's own task, at least


def test_outside_an_event_loop_no_task_count_is_made_up() -> None:
    text = SchedulerMetrics().render().decode()
    assert "kubesched_asyncio_tasks" not in text
    assert "process_cpu_seconds_total" in text


@pytest.mark.parametrize(("version", "word"), [("1.37.2", "UnscheduledPod"), ("1.35.4", "UnschedulablePod")])
async def test_a_pending_pods_events_are_spelled_as_the_release_spells_them(version: str, word: str) -> None:
    """kube-scheduler v1.37 renamed the EventResource of pending pods (UnschedulablePod -> UnscheduledPod)."""
    release = parse_release(version)
    cluster = MemoryCluster(
        [make_node("n", alloc={"cpu": "1", "pods": "10"})],
        [make_pod_object("p", namespace="ns", uid="", requests={"cpu": "100m"})],
    )
    clock = ManualClock()

    def make(mk: Callable[[str], Handle]) -> Built:
        return load(SchedulerConfiguration(), release=release).build(mk)

    scheduler = Scheduler(ClusterCache(), cluster, make, clock=clock, metrics=SchedulerMetrics())
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    s = _samples(scheduler.metrics.render().decode())
    assert _value(s, "scheduler_queue_incoming_pods_total", queue="active", event=f"{word}Add") == 1
    assert _value(s, "scheduler_event_handling_duration_seconds_count", event=f"{word}Add") == 1
