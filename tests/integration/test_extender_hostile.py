"""Issue 9 items 1 and 4 with the real kube-scheduler v1.35.4 and kube-apiserver: hostile quantities never make the
extender slow or fail, and before its node cache syncs (or for nodes it does not know) the extender makes
kube-scheduler retry the pod or report a reason, never drop the nodes silently."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from kubesched.cluster.kubeclient import APIError
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
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
from .test_apiserver_faults import proxied_kubeconfig

pytestmark = pytest.mark.controlplane

HUGE_FORMS = ("1e9999999", "1e999", "1e30", "8Ei")  # the hostile quantity, else the largest the API server takes


def wait(check: Callable[[], object], what: str, timeout: float = 60) -> float:
    """Seconds until ``check()`` is truthy."""
    start = time.monotonic()
    wait_until(check, what, within=timeout, interval=0.2)
    return time.monotonic() - start


def bound_to(cp: ControlPlane, ns: str, name: str) -> str:
    return str(cp.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")["spec"].get("nodeName") or "")


@pytest.fixture
def cleanup_nodes(control_plane: ControlPlane) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        control_plane.delete_node(name)


def node(cp: ControlPlane, names: list[str], name: str, res: str, **labels: str) -> None:
    cp.create_node(
        name, labels={"custom": "true", **labels}, allocatable={"cpu": "8", "memory": "32Gi", "pods": "110", RES: res}
    )
    names.append(name)


def huge_pod(cp: ControlPlane, ns: str, name: str) -> str:
    """Create a pod requesting the hostile amount of the managed resource; the form the API server accepted."""
    refused = []
    for form in HUGE_FORMS:
        pod = make_pod(name, 1)
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "10m", RES: form}, "limits": {RES: form}}
        try:
            cp.api("POST", f"/api/v1/namespaces/{ns}/pods", pod)
        except APIError as err:
            refused.append((form, str(err.body.get("message") if isinstance(err.body, dict) else err.body)[:200]))
            continue
        print(f"\nRELIABILITY extender: API server refused {refused or 'nothing'}; pod requests {RES}: {form}")
        return form
    pytest.fail(f"the API server refused every form: {refused}")


def test_hostile_quantities_keep_the_extender_fast_and_right(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path, cleanup_nodes: list[str]
) -> None:
    cp, ns = control_plane, kube_namespace
    node(cp, cleanup_nodes, "hq-8ei", "8Ei")
    node(cp, cleanup_nodes, "hq-1e30", "1e30")
    node(cp, cleanup_nodes, "hq-small", "2")
    ext = Extender(grant_extender_rbac(cp), tmp_path).start()
    try:
        wait(lambda: ext.metric("kubesched_extender_cached_nodes") >= 3, "nodes not in the extender's cache")
        with scheduler(cp, generated_config(tmp_path, ext.url, "--weight", "5"), "hostile"):
            form = huge_pod(cp, ns, "huge")
            # Saturated amounts: the pod fits only where the allocatable saturates too (as in the unit tests).
            took = wait(lambda: bound_to(cp, ns, "huge"), "the huge pod was not scheduled", 30)
            assert bound_to(cp, ns, "huge") in ("hq-8ei", "hq-1e30")
            print(f"RELIABILITY extender: pod {RES}={form} bound in {took:.2f} s")
            for i in range(4):
                cp.api("POST", f"/api/v1/namespaces/{ns}/pods", make_pod(f"n{i}", 1))
            for i in range(4):
                assert cp.wait_pod_bound(ns, f"n{i}", timeout=30) in ("hq-8ei", "hq-1e30", "hq-small")
            small = make_pod("too-big-for-small", 3)
            small["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "hq-small"}
            cp.api("POST", f"/api/v1/namespaces/{ns}/pods", small)
            cond = pod_condition(cp, ns, "too-big-for-small")
            assert cond["reason"] == "Unschedulable" and f"Insufficient {RES}" in cond["message"], cond
        # The extender's own answer, timed: a filter of the hostile pod again, over the hostile nodes.
        names = ["hq-8ei", "hq-1e30", "hq-small"]
        pod = cp.api("GET", f"/api/v1/namespaces/{ns}/pods/huge")
        pod["spec"].pop("nodeName", None)
        start = time.monotonic()
        r = httpx.post(f"{ext.url}/filter", json={"Pod": pod, "NodeNames": names}, timeout=10)
        took = time.monotonic() - start
        print(f"RELIABILITY extender: /filter with {RES}={form} answered {r.status_code} in {took:.3f} s")
        assert r.status_code == 200, r.text
        assert took < 2, f"/filter took {took:.2f} s"  # generous: it answers in tens of milliseconds
        # The huge pod itself (bound, so counted by the watch) now fills its node: every node has a verdict.
        answer = r.json()
        assert sorted([*answer["NodeNames"], *answer["FailedNodes"]]) == sorted(names), answer
        assert answer["FailedNodes"]["hq-small"] == f"Insufficient {RES}" and not answer["Error"], answer
        for verb in ("filter", "prioritize"):
            assert ext.metric("kubesched_extender_requests_total", verb=verb, code="500") == 0
        assert ext.metric("kubesched_extender_requests_total", verb="filter", code="200") >= 6
    finally:
        ext.stop()
    assert "Traceback" not in ext.log.read_text()


def test_before_the_sync_the_pod_is_retried_and_scheduled_after_heal(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path, cleanup_nodes: list[str]
) -> None:
    cp, ns = control_plane, kube_namespace
    node(cp, cleanup_nodes, "ns-a", "4")
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy:
        proxy.blackhole()  # the extender cannot list: its cache never syncs
        ext = Extender(proxied_kubeconfig(cp, proxy, tmp_path), tmp_path).start(ready=False)
        try:
            with scheduler(cp, generated_config(tmp_path, ext.url), "unsynced") as sched:
                cp.api("POST", f"/api/v1/namespaces/{ns}/pods", make_pod("early", 1))
                cond = pod_condition(cp, ns, "early")
                # Not silently dropped nodes ("0/1 nodes are available" with no reason): an error, retried.
                assert cond["reason"] == "SchedulerError", cond
                assert "node cache has not synced" in cond["message"], cond
                # kube-scheduler retries (after its backoff) and fails again: still not bound.
                wait(lambda: failed_attempts(sched, ns, "early") >= 2, "kube-scheduler retrying the pod", 30)
                assert bound_to(cp, ns, "early") == ""
                wait(
                    lambda: any(
                        e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"] == "early"
                        for e in cp.api("GET", f"/api/v1/namespaces/{ns}/events")["items"]
                    ),
                    "a FailedScheduling event for the pod",
                )
                proxy.heal()
                healed = time.monotonic()
                wait(lambda: bound_to(cp, ns, "early"), "not scheduled after the link healed", 90)
                took = time.monotonic() - healed
                print(f"\nRELIABILITY extender unsynced (API blackholed): pod bound {took:.1f} s after heal")
                assert bound_to(cp, ns, "early") == "ns-a"
        finally:
            ext.stop()


def test_a_node_the_extender_does_not_know_gets_a_reason(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path, cleanup_nodes: list[str]
) -> None:
    cp, ns = control_plane, kube_namespace
    node(cp, cleanup_nodes, "un-known", "1")
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy:
        ext = Extender(proxied_kubeconfig(cp, proxy, tmp_path), tmp_path).start()
        try:
            wait(lambda: ext.metric("kubesched_extender_cached_nodes") >= 1, "node not cached")
            proxy.blackhole()  # the watch goes silent: a node added now is unknown to the extender
            node(cp, cleanup_nodes, "un-new", "8")
            with scheduler(cp, generated_config(tmp_path, ext.url), "unknown"):
                cp.api("POST", f"/api/v1/namespaces/{ns}/pods", make_pod("late", 4))
                cond = pod_condition(cp, ns, "late")
                assert cond["reason"] == "Unschedulable", cond
                assert "node is not in the extender's node cache" in cond["message"], cond
                assert f"Insufficient {RES}" in cond["message"], cond  # un-known is judged as usual
                proxy.heal()
                healed = time.monotonic()
                wait(lambda: ext.metric("kubesched_extender_cached_nodes") >= 2, "the watch did not resume", 90)
                # Any node event requeues the pod (the extender's reason is resolvable).
                cp.api("PATCH", "/api/v1/nodes/un-new", {"metadata": {"labels": {"touched": "yes"}}})
                wait(lambda: bound_to(cp, ns, "late"), "not scheduled after the watch resumed", 60)
                print(f"\nRELIABILITY extender unknown node: bound {time.monotonic() - healed:.1f} s after heal")
                assert bound_to(cp, ns, "late") == "un-new"
        finally:
            ext.stop()
