"""The live scheduler's /metrics carries kube-scheduler's families after it binds pods on a real control plane."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.waiting import wait_until
from tests.integration.test_scheduler_e2e import Run, create, node_of, nodes, pod, running

pytestmark = pytest.mark.controlplane

FAMILIES = {
    "scheduler_schedule_attempts": "counter",
    "scheduler_scheduling_attempt_duration_seconds": "histogram",
    "scheduler_pending_pods": "gauge",
    "scheduler_unschedulable_pods": "gauge",
    "scheduler_pod_scheduling_attempts": "histogram",
    "scheduler_pod_scheduling_sli_duration_seconds": "histogram",
    "scheduler_queue_incoming_pods": "counter",
    "scheduler_framework_extension_point_duration_seconds": "histogram",
    "scheduler_plugin_execution_duration_seconds": "histogram",
    "scheduler_preemption_attempts": "counter",
    "scheduler_preemption_victims": "histogram",
    "leader_election_master_status": "gauge",
    # kube-scheduler v1.37's other families (all but pod groups' and placements')
    "scheduler_scheduling_algorithm_duration_seconds": "histogram",
    "scheduler_event_handling_duration_seconds": "histogram",
    "scheduler_queued_entities": "gauge",
    "scheduler_queue_incoming_entities": "counter",
    "scheduler_inflight_events": "gauge",
    "scheduler_goroutines": "gauge",
    "scheduler_pod_scheduled_after_flush": "counter",
    "scheduler_cache_size": "gauge",
    "scheduler_plugin_evaluation": "counter",
    "scheduler_get_node_hint_duration_seconds": "histogram",
    "scheduler_store_schedule_results_duration_seconds": "histogram",
    # the process and its runtime (Go's go_* in kube-scheduler)
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_virtual_memory_bytes": "gauge",
    "process_start_time_seconds": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "python_info": "gauge",
    "python_gc_collections": "counter",
    "kubesched_asyncio_tasks": "gauge",
}
# Families kube-scheduler v1.37.2 serves that kubesched does not: pod groups and placements (gang scheduling),
# client-go's and the API server library's own, Go's runtime (python_* and kubesched_asyncio_tasks stand in).
NOT_OURS = re.compile(
    r"scheduler_(podgroup_|placement_|generated_placements|workload_preemption|preemption_workload)"
    r"|(?!scheduler_|process_|leader_election_)"
    r"|process_network_|process_virtual_memory_max_bytes"
)


def test_live_metrics_show_kube_schedulers_families(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    specs = {f"n{i}": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}} for i in range(2)}
    with nodes(cp, run, specs), running(cp, tmp_path, run.config(leader_elect=True)) as sched:
        create(cp, ns, *[pod(f"p{i}", run.scheduler, "500m") for i in range(4)], pod("huge", run.scheduler, "64"))

        def values() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
            text = httpx.get(f"{sched.url}/metrics", timeout=5).text
            assert "_created" not in text
            out = {}
            families = list(text_string_to_metric_families(text))
            assert set(FAMILIES) <= {f.name for f in families}
            for family in families:
                assert FAMILIES.get(family.name, family.type) == family.type, family.name
                for s in family.samples:
                    out[(s.name, tuple(sorted(s.labels.items())))] = s.value
            return out

        def total(v: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
            return sum(x for (n, lab), x in v.items() if n == name and set(labels.items()) <= set(lab))

        def settled() -> bool:
            v = values()
            return (
                all(node_of(cp, ns, f"p{i}") for i in range(4))
                and total(v, "scheduler_pod_scheduling_attempts_count") == 4
                and total(v, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=run.scheduler) == 1
            )

        wait_until(settled, "4 pods bound, 1 parked, and the metrics saying so", within=60)
        v = values()
        names = {n for n, _ in v}
        for family, kind in FAMILIES.items():
            if family == "scheduler_plugin_execution_duration_seconds":
                continue  # sampled (10 % of the cycles, as upstream): maybe no series yet; its type is checked above
            if kind == "histogram":
                assert f"{family}_count" in names, family
            elif kind == "counter":
                assert f"{family}_total" in names, family
            else:
                assert family in names, family
        profile = run.scheduler
        assert total(v, "scheduler_schedule_attempts_total", result="scheduled", profile=profile) == 4
        assert total(v, "scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd") == 5
        count = "scheduler_framework_extension_point_duration_seconds_count"
        for point in ("PreFilter", "Reserve", "Permit"):
            assert total(v, count, extension_point=point, status="Success", profile=profile) >= 4, point
        # Filter is timed for every pod that passed PreFilter, batching's hinted ones included (their one node).
        assert total(v, count, extension_point="Filter", status="Success", profile=profile) >= 5
        # The binding cycle, against the real API server: one PreBind, Bind and PostBind per bound pod.
        for point in ("PreBind", "Bind", "PostBind"):
            assert total(v, count, extension_point=point, status="Success", profile=profile) == 4, point
        assert total(v, count, extension_point="PreEnqueue", profile=profile) >= 5
        assert total(v, "scheduler_pending_pods", queue="unschedulable") == 1
        assert total(v, "leader_election_master_status") == 1
        # v1.37's families, moved by this run: every pod seen, decided and its binding echoed by the watch.
        assert total(v, "scheduler_scheduling_algorithm_duration_seconds_count") >= 5
        handled = "scheduler_event_handling_duration_seconds_count"
        assert total(v, handled, event="UnscheduledPodAdd") >= 5
        assert total(v, handled, event="AssignedPodAdd") >= 4  # the bound pods, as the watch saw them
        assert total(v, "scheduler_queued_entities", queue="unschedulable", type="pod") == 1
        assert total(v, "scheduler_queue_incoming_entities_total", queue="active", type="pod") >= 5
        assert total(v, "scheduler_cache_size", type="nodes") >= 2
        assert total(v, "scheduler_cache_size", type="pods") >= 4
        assert total(v, "scheduler_inflight_events", event="PodPopped") == 0
        assert total(v, "scheduler_goroutines", operation="binding") == 0  # settled: no binding cycle left
        evaluated = "scheduler_plugin_evaluation_total"
        assert total(v, evaluated, plugin="NodeAffinity", extension_point="PreFilter", profile=profile) >= 5
        assert total(v, evaluated, plugin="NodeResourcesFit", extension_point="Filter", profile=profile) >= 5
        assert total(v, "scheduler_store_schedule_results_duration_seconds_count", profile=profile) >= 1
        assert total(v, "process_cpu_seconds_total") > 0
        assert total(v, "process_resident_memory_bytes") > 0
        assert total(v, "kubesched_asyncio_tasks") >= 1


def _families(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """Each family of an exposition: its type and every label name its samples carry (``le`` included)."""
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for family in text_string_to_metric_families(text):
        labels = frozenset(k for s in family.samples for k in s.labels)
        out[family.name] = (family.type, labels)
    return out


def test_names_types_and_labels_match_the_real_kube_scheduler(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    """kube-scheduler v1.37.2 and kubesched each schedule a pod; the families both serve have one type and the same
    labels, and kubesched serves every scheduler_* family kube-scheduler does but pod groups' and placements'."""
    cp, ns = control_plane, kube_namespace
    ours, theirs = Run(), Run()
    specs = {"a": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}}}
    with nodes(cp, ours, dict(specs)), nodes(cp, theirs, {"a": {"allocatable": {"cpu": "2", "pods": "110"}}}):
        kube = cp.start_scheduler(theirs.config(), name=f"kube-scheduler-{theirs.id}")
        try:
            create(cp, ns, pod("k1", theirs.scheduler), pod("khuge", theirs.scheduler, "64"))
            wait_until(lambda: node_of(cp, ns, "k1") is not None, "kube-scheduler binds k1", within=60)

            def kube_text() -> str:
                return httpx.get(f"{kube.url}/metrics", verify=False, timeout=5, trust_env=False).text

            wait_until(lambda: "scheduler_unschedulable_pods{" in kube_text(), "khuge parked", within=30)
            upstream = _families(kube_text())
        finally:
            kube.stop()
        with running(cp, tmp_path, ours.config()) as sched:
            create(cp, ns, pod("s1", ours.scheduler), pod("shuge", ours.scheduler, "64"))
            wait_until(lambda: node_of(cp, ns, "s1") is not None, "kubesched binds s1", within=60)

            def settled() -> bool:
                text = httpx.get(f"{sched.url}/metrics", timeout=5).text
                return "scheduler_unschedulable_pods{" in text and 'event="AssignedPodAdd"' in text

            wait_until(settled, "shuge parked and s1's binding seen", within=30)
            mine = _families(httpx.get(f"{sched.url}/metrics", timeout=5).text)
    scheduler_families = {n for n in upstream if n.startswith("scheduler_")}
    assert len(scheduler_families) >= 20, sorted(upstream)  # the scrape saw kube-scheduler at work
    missing = sorted(n for n in upstream if not NOT_OURS.match(n) and n not in mine)
    assert missing == [], f"kube-scheduler v1.37.2 serves {missing}; kubesched does not"
    both = sorted(set(upstream) & set(mine))
    assert len(both) >= 25, both
    for name in both:
        assert mine[name][0] == upstream[name][0], (name, mine[name][0], upstream[name][0])
        assert mine[name][1] == upstream[name][1], (name, sorted(mine[name][1]), sorted(upstream[name][1]))
