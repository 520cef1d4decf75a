"""The real kube-scheduler of each supported release (v1.35.4, v1.37.2) calling our extender (custom-label
policy) on its API server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.waiting import wait_until

from .extender_harness import (
    RES,
    Extender,
    failed_attempts,
    generated_config,
    grant_extender_rbac,
    make_pod,
    pod_condition,
    scheduler,
)

# Each test runs against the control plane of every supported release (one at a time).
pytestmark = [pytest.mark.controlplane, pytest.mark.all_kubernetes_versions]

NODES = {
    # name: (has label `custom`, custom-resource, cordoned)
    "e2e-small": (True, 2, False),
    "e2e-big": (True, 8, False),
    "e2e-nolabel": (False, 16, False),
}


@pytest.fixture(scope="module")
def extender(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Extender]:
    ext = Extender(grant_extender_rbac(control_plane), tmp_path_factory.mktemp("extender")).start()
    yield ext
    ext.stop()


@pytest.fixture
def nodes(control_plane: ControlPlane) -> Iterator[list[str]]:
    for name, (custom, res, cordoned) in NODES.items():
        labels = {"custom": "true"} if custom else {}
        control_plane.create_node(
            name,
            labels=labels,
            unschedulable=cordoned,
            allocatable={"cpu": "8", "memory": "32Gi", "pods": "110", RES: str(res)},
        )
    yield list(NODES)
    for name in NODES:
        control_plane.delete_node(name)


def _create(cp: ControlPlane, ns: str, pod: dict) -> None:  # type: ignore[type-arg]
    cp.api("POST", f"/api/v1/namespaces/{ns}/pods", pod)


@pytest.mark.parametrize("cache_capable", [True, False], ids=["names-mode", "full-node-mode"])
def test_pods_land_only_where_the_policy_allows(
    control_plane: ControlPlane,
    kube_namespace: str,
    extender: Extender,
    nodes: list[str],
    tmp_path: Path,
    cache_capable: bool,
) -> None:
    mode = "--node-cache-capable" if cache_capable else "--no-node-cache-capable"
    before = extender.metric("kubesched_extender_requests_total", verb="filter", code="200")
    with scheduler(control_plane, generated_config(tmp_path, extender.url, mode, "--weight", "5"), "ext"):
        # needs 4: only e2e-big has that much among the labelled nodes (e2e-nolabel has 16 but no label).
        for i in range(3):
            _create(control_plane, kube_namespace, make_pod(f"p{i}", 4 if i == 0 else 1))
        assert control_plane.wait_pod_bound(kube_namespace, "p0") == "e2e-big"
        for i in (1, 2):
            assert control_plane.wait_pod_bound(kube_namespace, f"p{i}") in ("e2e-big", "e2e-small")
    assert extender.metric("kubesched_extender_requests_total", verb="filter", code="200") > before


def test_prioritize_picks_the_node_with_most_custom_resource(
    control_plane: ControlPlane, kube_namespace: str, extender: Extender, nodes: list[str], tmp_path: Path
) -> None:
    with scheduler(control_plane, generated_config(tmp_path, extender.url, "--weight", "5"), "prio"):
        for i in range(3):
            _create(control_plane, kube_namespace, make_pod(f"q{i}", 1))
            # Both labelled nodes fit; in-tree scores tie, ours (10 vs 2, ×5×10) decide.
            assert control_plane.wait_pod_bound(kube_namespace, f"q{i}") == "e2e-big"
    assert extender.metric("kubesched_extender_requests_total", verb="prioritize", code="200") >= 3


def test_unschedulable_pod_reports_our_reasons(
    control_plane: ControlPlane, kube_namespace: str, extender: Extender, nodes: list[str], tmp_path: Path
) -> None:
    with scheduler(control_plane, generated_config(tmp_path, extender.url), "unsched"):
        _create(control_plane, kube_namespace, make_pod("huge", 100))
        cond = pod_condition(control_plane, kube_namespace, "huge")
    assert cond["reason"] == "Unschedulable"
    msg = cond["message"]
    assert msg.startswith("0/")
    assert "2 Insufficient example.com/custom-resource" in msg
    assert "1 node(s) didn't have label custom" in msg


def test_bind_verb_makes_the_extender_bind(
    control_plane: ControlPlane, kube_namespace: str, extender: Extender, nodes: list[str], tmp_path: Path
) -> None:
    before = extender.metric("kubesched_extender_requests_total", verb="bind", code="200")
    with scheduler(control_plane, generated_config(tmp_path, extender.url, "--bind-verb", "bind"), "bind"):
        _create(control_plane, kube_namespace, make_pod("b0", 4))
        assert control_plane.wait_pod_bound(kube_namespace, "b0") == "e2e-big"
    assert extender.metric("kubesched_extender_requests_total", verb="bind", code="200") == before + 1
    # klog text, fields as the scheduler's: the line an operator greps for.
    line = f'"Successfully bound pod to node" pod="{kube_namespace}/b0" node="e2e-big" profile="default-scheduler"'
    assert line in extender.log.read_text()


def _priority_class(cp: ControlPlane, name: str, value: int) -> None:
    if cp.get_or_none(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}") is None:
        cp.api(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value},
        )


def test_preemption_consults_the_extender(
    control_plane: ControlPlane, kube_namespace: str, extender: Extender, nodes: list[str], tmp_path: Path
) -> None:
    cp = control_plane
    _priority_class(cp, "e2e-low", 10)
    _priority_class(cp, "e2e-high", 1000)
    config = generated_config(tmp_path, extender.url, "--preempt-verb", "preempt", "--weight", "5")
    path = f"/api/v1/namespaces/{kube_namespace}/pods"
    # Every node's cpu is taken by a low-priority pod (placed directly), so kube-scheduler's own
    # dry run proposes a victim on each node; our policy must veto the nodes it would still refuse.
    for node in nodes:
        low = make_pod(f"low-{node}", 0, priority_class="e2e-low")
        low["spec"]["nodeName"] = node
        low["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "8"}}
        _create(cp, kube_namespace, low)
    before = extender.metric("kubesched_extender_requests_total", verb="preempt", code="200")
    with scheduler(cp, config, "preempt"):
        # Needs 3 of the custom resource: e2e-small has 2 and e2e-nolabel lacks the label.
        high = make_pod("high", 3, priority_class="e2e-high")
        high["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
        _create(cp, kube_namespace, high)
        wait_until(
            lambda: cp.api("GET", f"{path}/high").get("status", {}).get("nominatedNodeName") == "e2e-big",
            "high to be nominated to e2e-big",
            within=30,
        )
        assert extender.metric("kubesched_extender_requests_total", verb="preempt", code="200") > before
        victim = cp.get_or_none(f"{path}/low-e2e-big")
        assert victim is None or victim["metadata"].get("deletionTimestamp"), "the victim was not evicted"
        for spared in ("low-e2e-small", "low-e2e-nolabel"):
            assert not cp.api("GET", f"{path}/{spared}")["metadata"].get("deletionTimestamp"), spared
        # No kubelet finishes the eviction: do its part, then the preemptor lands on the freed node.
        if victim is not None:
            cp.api("DELETE", f"{path}/low-e2e-big", params={"gracePeriodSeconds": "0"})
        assert cp.wait_pod_bound(kube_namespace, "high") == "e2e-big"


@pytest.mark.parametrize("ignorable", [True, False], ids=["ignorable", "not-ignorable"])
def test_extender_down(
    control_plane: ControlPlane, kube_namespace: str, nodes: list[str], tmp_path: Path, ignorable: bool
) -> None:
    cp = control_plane
    ext = Extender(grant_extender_rbac(cp), tmp_path)
    # Point kube-scheduler at the extender's port before anything listens there.
    args = ("--ignorable",) if ignorable else ()
    with scheduler(cp, generated_config(tmp_path, ext.url, "--http-timeout", "2s", *args), "down") as sched:
        _create(cp, kube_namespace, make_pod("d0", 1))
        if ignorable:
            # Scheduled without the extender: on any node, even one our policy would refuse.
            assert cp.wait_pod_bound(kube_namespace, "d0") in nodes
            return
        cond = pod_condition(cp, kube_namespace, "d0")
        assert cond["reason"] == "SchedulerError"
        assert ext.url in cond["message"]
        # kube-scheduler retries (after its backoff) and fails again: still not bound.
        wait_until(lambda: failed_attempts(sched, kube_namespace, "d0") >= 2, "kube-scheduler retrying d0")
        assert not cp.api("GET", f"/api/v1/namespaces/{kube_namespace}/pods/d0")["spec"].get("nodeName")
        ext.start()
        try:
            assert cp.wait_pod_bound(kube_namespace, "d0", timeout=60) in ("e2e-big", "e2e-small")
        finally:
            ext.stop()


def test_bind_errors_come_back_in_the_error_field(
    control_plane: ControlPlane, kube_namespace: str, extender: Extender, nodes: list[str]
) -> None:
    cp = control_plane

    def bind(name: str, node: str) -> str:
        args = {"PodName": name, "PodNamespace": kube_namespace, "PodUID": "", "Node": node}
        r = httpx.post(f"{extender.url}/bind", json=args, timeout=10)
        assert r.status_code == 200
        error: str = r.json()["Error"]
        return error

    missing = bind("no-such-pod", "e2e-big")
    assert "404" in missing and "no-such-pod" in missing
    placed = make_pod("placed", 1)
    placed["spec"]["nodeName"] = "e2e-small"
    _create(cp, kube_namespace, placed)
    conflict = bind("placed", "e2e-big")
    assert "409" in conflict and "already assigned to node" in conflict
    _create(cp, kube_namespace, make_pod("free", 1))
    assert bind("free", "e2e-big") == ""
    assert cp.api("GET", f"/api/v1/namespaces/{kube_namespace}/pods/free")["spec"]["nodeName"] == "e2e-big"
