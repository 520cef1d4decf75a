"""kube-scheduler's metric families, as v1.35.4 defines them, moved by a scheduling run in memory."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched.api.core import Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.scheduler.engine import cycle
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.metrics import SchedulerMetrics
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_node, make_pod_object


def _exp(start: float, factor: float, count: int) -> list[float]:
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return out


# pkg/scheduler/metrics/metrics.go at v1.35.4: (type, labels, buckets).
UPSTREAM = {
    "scheduler_schedule_attempts": ("counter", {"result", "profile"}, None),
    "scheduler_scheduling_attempt_duration_seconds": ("histogram", {"result", "profile"}, _exp(0.001, 2, 15)),
    "scheduler_pending_pods": ("gauge", {"queue"}, None),
    "scheduler_unschedulable_pods": ("gauge", {"plugin", "profile"}, None),
    "scheduler_pod_scheduling_attempts": ("histogram", set(), [1, 2, 4, 8, 16]),
    "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", {"attempts"}, _exp(0.01, 2, 20)),
    "scheduler_queue_incoming_pods": ("counter", {"queue", "event"}, None),
    "scheduler_framework_extension_point_duration_seconds": (
        "histogram",
        {"extension_point", "status", "profile"},
        _exp(0.0001, 2, 12),
    ),
    "scheduler_plugin_execution_duration_seconds": (
        "histogram",
        {"plugin", "extension_point", "status"},
        _exp(0.00001, 1.5, 20),
    ),
    "scheduler_preemption_attempts": ("counter", set(), None),
    "scheduler_preemption_victims": ("histogram", set(), [1, 2, 4, 8, 16, 32, 64]),
}


def _pod(name: str, priority: int, cpu: str, node: str = "", gated: bool = False) -> Pod:
    gates = {"schedulingGates": [{"name": "wait"}]} if gated else {}
    return make_pod_object(
        name, namespace="ns", uid="", requests={"cpu": cpu}, node_name=node, priority=priority, **gates
    )


async def _run(monkeypatch: pytest.MonkeyPatch) -> tuple[Scheduler, str]:
    monkeypatch.setattr(cycle, "PLUGIN_METRICS_SAMPLE", 1.0)  # every cycle sampled, so the test is certain
    nodes = [
        make_node(n, alloc={"cpu": cpu, "pods": "10"}) for n, cpu in (("a", "2"), ("b", "2"), ("c", "1"), ("d", "1"))
    ]
    pods = [
        _pod("low-a", 1, "2", node="a"),
        _pod("low-b", 1, "2", node="b"),
        _pod("fits", 0, "1"),  # on c or d: scored
        _pod("high", 1000, "2"),  # preempts one of the low pods
        _pod("huge", 0, "64"),  # never fits (and may preempt nothing)
        _pod("gated", 0, "1", gated=True),
    ]
    cluster = MemoryCluster(nodes, pods)
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock, metrics=SchedulerMetrics())
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    return scheduler, scheduler.metrics.render().decode()


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def _value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(v for lab, v in samples.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


async def test_families_as_upstream_defines_them(monkeypatch: pytest.MonkeyPatch) -> None:
    _, text = await _run(monkeypatch)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name, (kind, labels, buckets) in UPSTREAM.items():
        family = families.get(name)
        assert family is not None, name
        assert family.type == kind, name
        assert family.samples, f"{name} has no series after the run"
        for s in family.samples:
            assert set(s.labels) - {"le"} == labels, (name, s.labels)
        if buckets is not None:
            les = sorted({float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")})
            assert les == [*buckets, float("inf")], name
    assert "_created" not in text


async def test_values_move_through_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    scheduler, text = await _run(monkeypatch)
    s = _samples(text)
    profile = "default-scheduler"
    assert _value(s, "scheduler_schedule_attempts_total", result="scheduled", profile=profile) == 2
    assert _value(s, "scheduler_schedule_attempts_total", result="unschedulable", profile=profile) >= 2
    assert _value(s, "scheduler_pod_scheduling_attempts_count") == 2
    assert _value(s, "scheduler_pod_scheduling_attempts_sum") == 3  # "high" took two attempts
    assert _value(s, "scheduler_pod_scheduling_sli_duration_seconds_count") == 2
    assert _value(s, "scheduler_preemption_attempts_total") == 1
    assert _value(s, "scheduler_preemption_victims_count") == 1
    assert _value(s, "scheduler_preemption_victims_sum") == 1
    # The pod that never fits is parked, counted under the plugin that rejected it; the gated one under its gate.
    assert _value(s, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=profile) == 1
    assert _value(s, "scheduler_unschedulable_pods", plugin="SchedulingGates", profile=profile) == 1
    assert _value(s, "scheduler_pending_pods", queue="gated") == 1
    assert _value(s, "scheduler_pending_pods", queue="unschedulable") == 1
    assert _value(s, "scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd") == 3
    assert _value(s, "scheduler_queue_incoming_pods_total", queue="unschedulable", event="UnscheduledPodAdd") == 1
    assert _value(s, "scheduler_queue_incoming_pods_total", event="ScheduleAttemptFailure") >= 2
    ep = "scheduler_framework_extension_point_duration_seconds_count"
    for point in ("PreFilter", "Filter", "Reserve", "Permit"):
        assert _value(s, ep, extension_point=point, status="Success", profile=profile) >= 2, point
    assert _value(s, ep, extension_point="PostFilter", status="Success", profile=profile) == 1  # the preemption
    assert _value(s, ep, extension_point="PostFilter", status="Unschedulable", profile=profile) >= 1
    assert _value(s, ep, extension_point="Score", profile=profile) >= 1
    assert _value(s, "scheduler_plugin_execution_duration_seconds_count", extension_point="PostFilter") >= 2
    assert scheduler.queue.unschedulable_by_plugin() == {
        ("NodeResourcesFit", profile): 1,
        ("SchedulingGates", profile): 1,
    }


async def test_plugin_durations_are_sampled() -> None:
    metrics = SchedulerMetrics()
    c = cycle.Cycle(ClusterCache(), record_plugin=metrics.plugin)
    sampled = sum(c._sampler.random() < cycle.PLUGIN_METRICS_SAMPLE for _ in range(10_000))
    assert 800 < sampled < 1200  # ~10 %, as kube-scheduler's pluginMetricsSamplePercent


async def test_binding_cycle_and_queue_points_are_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    _, text = await _run(monkeypatch)
    s = _samples(text)
    ep = "scheduler_framework_extension_point_duration_seconds_count"
    profile = "default-scheduler"
    # Two pods bound (fits, high): each binding cycle times PreBind, Bind and PostBind, as upstream.
    for point in ("PreBind", "Bind", "PostBind"):
        assert _value(s, ep, extension_point=point, status="Success", profile=profile) == 2, point
    # Every pod added to the queue ran PreEnqueue; the gated one was told Unschedulable by SchedulingGates.
    assert _value(s, ep, extension_point="PreEnqueue", status="Success", profile=profile) >= 4
    assert _value(s, ep, extension_point="PreEnqueue", status="UnschedulableAndUnresolvable", profile=profile) >= 1
    plugin = "scheduler_plugin_execution_duration_seconds_count"
    # Sampled (here every cycle): each plugin at each point it runs, the batch points included.
    for name, point in (
        ("NodeAffinity", "PreFilter"),
        ("NodeResourcesFit", "Filter"),
        ("TaintToleration", "Filter"),  # a static filter: timed when its stage is evaluated, not looked up
        ("NodeResourcesBalancedAllocation", "PreScore"),
        ("NodeResourcesFit", "Score"),
        ("NodeResourcesBalancedAllocation", "Score"),
        ("TaintToleration", "ScoreExtensionNormalize"),
        ("DefaultBinder", "Bind"),
        ("SchedulingGates", "PreEnqueue"),
    ):
        assert _value(s, plugin, plugin=name, extension_point=point) >= 1, (name, point)


async def test_batched_cycles_time_filter_and_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods placed through opportunistic batching's hint still count a Filter (and, sampled, Sign) each."""
    monkeypatch.setattr(cycle, "PLUGIN_METRICS_SAMPLE", 1.0)
    nodes = [make_node(f"n{i}", alloc={"cpu": "8", "pods": "110"}) for i in range(6)]
    pods = [_pod(f"p{i}", 0, "100m") for i in range(20)]
    cluster = MemoryCluster(nodes, pods)
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock, metrics=SchedulerMetrics())
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    s = _samples(scheduler.metrics.render().decode())
    hinted = _value(s, "scheduler_batch_attempts_total", result="hint_used")
    assert hinted > 0, "the run never used batching: the test proves nothing"
    ep = "scheduler_framework_extension_point_duration_seconds_count"
    assert _value(s, ep, extension_point="Filter") == 20
    assert _value(s, ep, extension_point="Sign") == 20
    # Sampled (every cycle here): each signer's time at Sign (static signatures are signed once per pod spec).
    plugin = "scheduler_plugin_execution_duration_seconds_count"
    assert _value(s, plugin, plugin="NodeResourcesFit", extension_point="Sign", status="Success") >= 1
    # A hinted pod skips PreScore/Score: fewer of those than pods.
    assert _value(s, ep, extension_point="Score") == 20 - hinted
