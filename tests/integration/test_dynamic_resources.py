"""DynamicResources against the real kube-apiserver (resource.k8s.io/v1), beside the real kube-scheduler.

Our scheduler allocates a claim through the status subresource; a pod naming a missing claim waits until the
claim exists; a claim of a class that does not exist gets the FailedScheduling message kube-scheduler writes
for the very same objects.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
from kubesched.testing.waiting import wait_until
from kubesched.versions import Release
from tests.integration.test_apiserver_faults import RECOVERY_BOUND, proxied_kubeconfig, report
from tests.integration.test_scheduler_e2e import Run, condition, create, events, node_of, nodes, pod, running

pytestmark = pytest.mark.controlplane
RESOURCE = "/apis/resource.k8s.io/v1"


def device_class(cp: ControlPlane, name: str, driver: str) -> None:
    sel = [{"cel": {"expression": f'device.driver == "{driver}"'}}]
    cp.api("POST", f"{RESOURCE}/deviceclasses", {"metadata": {"name": name}, "spec": {"selectors": sel}})


def resource_slice(cp: ControlPlane, node: str, driver: str, memory: str, count: int = 1) -> None:
    spec = {
        "driver": driver,
        "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}", "capacity": {"memory": {"value": memory}}} for i in range(count)],
    }
    cp.api("POST", f"{RESOURCE}/resourceslices", {"metadata": {"name": f"{node}-gpus"}, "spec": spec})


def claim(cp: ControlPlane, ns: str, name: str, cls: str, selector: str | None = None) -> None:
    req: dict[str, Any] = {"deviceClassName": cls}
    if selector:
        req["selectors"] = [{"cel": {"expression": selector}}]
    body = {"metadata": {"name": name}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": req}]}}}
    cp.api("POST", f"{RESOURCE}/namespaces/{ns}/resourceclaims", body)


def get_claim(cp: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    got: dict[str, Any] = cp.api("GET", f"{RESOURCE}/namespaces/{ns}/resourceclaims/{name}")
    return got


def with_claim(p: dict[str, Any], claim_name: str) -> dict[str, Any]:
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return p


def test_the_api_server_serves_resource_v1(control_plane: ControlPlane) -> None:
    kinds = {r["kind"] for r in control_plane.api("GET", RESOURCE)["resources"]}
    assert {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"} <= kinds


def test_a_claim_satisfiable_on_one_node_is_allocated_there_at_prebind(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    driver, cls = f"{run.id}.example.com", f"gpu-{run.id}"
    specs = {s: {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}} for s in ("small", "big")}
    with nodes(cp, run, specs), running(cp, tmp_path, run.config()) as sched:
        device_class(cp, cls, driver)
        resource_slice(cp, run.node("small"), driver, "16Gi")
        resource_slice(cp, run.node("big"), driver, "80Gi")
        selector = f'device.capacity["{driver}"].memory.compareTo(quantity("40Gi")) >= 0'
        claim(cp, ns, "big-gpu", cls, selector)
        create(cp, ns, with_claim(pod("trainer", run.scheduler), "big-gpu"))
        bound = wait_until(lambda: node_of(cp, ns, "trainer"), "trainer bound", within=60)
        assert bound == run.node("big"), sched.tail()
        got = get_claim(cp, ns, "big-gpu")
        results = got["status"]["allocation"]["devices"]["results"]
        assert [(r["driver"], r["pool"], r["device"]) for r in results] == [(driver, run.node("big"), "gpu-0")]
        assert [r["name"] for r in got["status"]["reservedFor"]] == ["trainer"]
        assert "resource.kubernetes.io/delete-protection" in got["metadata"]["finalizers"]


def test_a_pod_naming_a_missing_claim_waits_until_the_claim_exists(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    driver, cls, kube_name = f"{run.id}.example.com", f"gpu-{run.id}", f"kube-{run.id}"
    specs = {"only": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    with nodes(cp, run, specs), running(cp, tmp_path, run.config()) as sched:
        kube = cp.start_scheduler(run.config(profiles=[{"schedulerName": kube_name}]), name=f"dra-{run.id}")
        try:
            device_class(cp, cls, driver)
            resource_slice(cp, run.node("only"), driver, "16Gi", count=2)
            create(cp, ns, with_claim(pod("waiting", run.scheduler), "later"))
            create(cp, ns, with_claim(pod("kube-waiting", kube_name), "later-kube"))
            # Held back at PreEnqueue, as kube-scheduler holds it: never attempted, so never bound.
            wait_until(
                lambda: sched.metric("scheduler_pending_pods", queue="gated") == 1,
                "the pod held back by DynamicResources' PreEnqueue",
                within=30,
            )
            assert node_of(cp, ns, "waiting") is None and node_of(cp, ns, "kube-waiting") is None
            assert condition(cp, ns, "waiting") is None  # no attempt, no report (kube-scheduler writes none)
            took = {}
            for name, claim_name in (("waiting", "later"), ("kube-waiting", "later-kube")):
                created = time.monotonic()
                claim(cp, ns, claim_name, cls)
                bound = wait_until(
                    lambda n=name: node_of(cp, ns, n),  # type: ignore[misc]
                    f"{name} bound once its claim exists",
                    within=60,
                )
                took[name] = time.monotonic() - created
                assert bound == run.node("only"), sched.tail()
        finally:
            kube.stop()
        print(
            f"bound after its claim was created: ours {took['waiting']:.2f}s,"
            f" kube-scheduler {took['kube-waiting']:.2f}s"
        )
        assert took["waiting"] < 30  # the claim's watch event lets it through PreEnqueue (no 5-minute flush)


@pytest.mark.all_kubernetes_versions
def test_a_missing_device_class_gets_kube_scheduler_s_message(
    control_plane: ControlPlane, kubernetes_version: Release, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    specs = {"n": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    kube_name = f"kube-{run.id}"
    with nodes(cp, run, specs), running(cp, tmp_path, run.config()):
        kube = cp.start_scheduler(run.config(profiles=[{"schedulerName": kube_name}]), name=f"dra-{run.id}")
        try:
            claim(cp, ns, "no-class", f"absent-{run.id}")
            create(
                cp,
                ns,
                with_claim(pod("ours", run.scheduler), "no-class"),
                with_claim(pod("theirs", kube_name), "no-class"),
            )
            mine = wait_until(lambda: condition(cp, ns, "ours"), "our PodScheduled condition", within=60)
            kube_cond = wait_until(lambda: condition(cp, ns, "theirs"), "kube-scheduler's condition", within=60)
        finally:
            kube.stop()
        assert mine["message"] == kube_cond["message"]
        assert f"request gpu: device class absent-{run.id} does not exist." in mine["message"]
        # v1.35's PostFilter names its reason ("no new claims to deallocate"); v1.37's gives none.
        reason = "no new claims to deallocate, " if kubernetes_version.dra_post_filter_names_no_claims else ""
        assert f"does not exist. {reason}preemption: " in mine["message"]
        failed = [e for e in events(cp, ns, "ours") if e["reason"] == "FailedScheduling"]
        assert failed and failed[0]["note"] == mine["message"]


@pytest.mark.all_kubernetes_versions
def test_a_claim_no_device_satisfies_gets_kube_scheduler_s_message(
    control_plane: ControlPlane, kubernetes_version: Release, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    driver, cls, kube_name = f"{run.id}.example.com", f"gpu-{run.id}", f"kube-{run.id}"
    specs = {s: {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}} for s in ("a", "b")}
    with nodes(cp, run, specs), running(cp, tmp_path, run.config()):
        device_class(cp, cls, driver)
        resource_slice(cp, run.node("a"), driver, "16Gi")
        too_big = f'device.capacity["{driver}"].memory.compareTo(quantity("1Ti")) >= 0'
        claim(cp, ns, "ours", cls, too_big)
        claim(cp, ns, "theirs", cls, too_big)
        kube = cp.start_scheduler(run.config(profiles=[{"schedulerName": kube_name}]), name=f"dra-{run.id}")
        try:
            create(
                cp, ns, with_claim(pod("ours", run.scheduler), "ours"), with_claim(pod("theirs", kube_name), "theirs")
            )
            mine = wait_until(lambda: condition(cp, ns, "ours"), "our PodScheduled condition", within=60)
            kube_cond = wait_until(lambda: condition(cp, ns, "theirs"), "kube-scheduler's condition", within=60)
        finally:
            kube.stop()
        assert mine["message"] == kube_cond["message"]
        assert "2 cannot allocate all claims" in mine["message"]
        reason = "still not schedulable, " if kubernetes_version.dra_post_filter_names_no_claims else ""
        assert f"claims. {reason}preemption: " in mine["message"]


def test_dra_scheduling_recovers_after_a_silent_link_and_an_apiserver_restart(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    driver, cls = f"{run.id}.example.com", f"gpu-{run.id}"
    specs = {"only": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, specs):
        kubeconfig = proxied_kubeconfig(cp, proxy, tmp_path)
        with running(cp, tmp_path, run.config(), kubeconfig=kubeconfig) as sched:
            device_class(cp, cls, driver)
            resource_slice(cp, run.node("only"), driver, "16Gi", count=3)
            claim(cp, ns, "c0", cls)
            create(cp, ns, with_claim(pod("before", run.scheduler), "c0"))
            wait_until(lambda: node_of(cp, ns, "before"), "a pod with a claim bound through the proxy", within=60)
            proxy.blackhole()  # every connection silent: watches, and the claim writes to come
            claim(cp, ns, "c1", cls)
            create(cp, ns, with_claim(pod("during", run.scheduler), "c1"))
            time.sleep(10)  # the outage's length is the behaviour under test
            assert node_of(cp, ns, "during") is None
            proxy.heal()
            healed = time.monotonic()
            wait_until(lambda: node_of(cp, ns, "during"), "bound after the link healed", within=RECOVERY_BOUND)
            report(
                "blackhole 10 s -> pod with a claim created during it bound, claim allocated", time.monotonic() - healed
            )
            cp.restart_apiserver()
            ready = time.monotonic()
            claim(cp, ns, "c2", cls)
            create(cp, ns, with_claim(pod("after", run.scheduler), "c2"))
            wait_until(lambda: node_of(cp, ns, "after"), "bound after the restart", within=RECOVERY_BOUND)
            report("kube-apiserver restarted -> pod with a claim bound, claim allocated", time.monotonic() - ready)
            assert sched.proc is not None and sched.proc.poll() is None
        devices = []
        for name, pod_name in (("c0", "before"), ("c1", "during"), ("c2", "after")):
            got = get_claim(cp, ns, name)
            assert [r["name"] for r in got["status"]["reservedFor"]] == [pod_name]  # reserved once, not twice
            devices += [r["device"] for r in got["status"]["allocation"]["devices"]["results"]]
        assert sorted(devices) == ["gpu-0", "gpu-1", "gpu-2"]  # no device given twice
