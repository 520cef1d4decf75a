"""`kubesched explain --kubeconfig` against the real kube-apiserver and kube-scheduler: "my pod is pending" →
the reason per node, kube-scheduler's own message, and a change that, applied, lets kube-scheduler place it.
Through connection resets the answer is the same; with the API server unreachable, a clear error.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
from kubesched.testing.waiting import wait_until
from kubesched.versions import Release
from tests.integration.test_apiserver_faults import proxied_kubeconfig
from tests.integration.test_scheduler_e2e import Run, condition, create, nodes, pod, running

pytestmark = [pytest.mark.controlplane, pytest.mark.all_kubernetes_versions]

TAINT = {"key": "gpu", "value": "shared", "effect": "NoSchedule"}


def explain(kubeconfig: Path, config: Path, target: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kubesched", "explain", target, "--kubeconfig", str(kubeconfig)]
    cmd += ["--config", str(config), "-o", "json", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def specs() -> dict[str, dict[str, Any]]:
    return {
        "a": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        "b": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}, "taints": [TAINT]},
        "c": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    }


def kube_message(cp: ControlPlane, ns: str, name: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cond = condition(cp, ns, name)
        if cond is not None and cond.get("reason") == "Unschedulable":
            return str(cond["message"])
        time.sleep(0.1)
    raise TimeoutError(f"kube-scheduler gave {ns}/{name} no Unschedulable condition within {timeout}s")


def test_explain_says_why_kube_scheduler_refuses_and_what_fixes_it(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path, kubernetes_version: Release
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    nobody, kube = f"nobody-{run.id}", f"kube-{run.id}"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(run.config(profiles=[{"schedulerName": nobody}])))
    version = f"v{kubernetes_version.version}"
    with nodes(cp, run, specs()):
        create(cp, ns, pod("busy", nobody, cpu="3", nodeName=run.node("a")))
        create(cp, ns, pod("wants", nobody, cpu="2500m"))
        done = explain(cp.admin_kubeconfig, config, f"{ns}/wants", "--kubernetes-version", version)
        assert done.returncode == 0, done.stderr
        ex = json.loads(done.stdout)
        assert ex["node"] is None and ex["kubernetesVersion"] == version
        mine = {n["name"]: n for n in ex["nodes"] if n["name"].startswith(f"ks-{run.id}-")}
        assert mine[run.node("a")]["reported"]["plugin"] == "NodeResourcesFit"
        assert mine[run.node("a")]["reported"]["reason"] == "Insufficient cpu"
        assert mine[run.node("b")]["reported"]["plugin"] == "TaintToleration"
        assert mine[run.node("c")]["reported"]["reason"] == "Insufficient cpu"  # 2 cpu in all: unresolvable
        assert mine[run.node("c")]["reported"]["code"] == "UnschedulableAndUnresolvable"
        helps = {h["change"]: h for h in ex["help"]}
        assert helps["if it tolerated `gpu=shared:NoSchedule`"]["opened"] == [run.node("b")]

        # The real kube-scheduler, on the pod's twin: the same message, word for word.
        kube_sched = cp.start_scheduler(run.config(profiles=[{"schedulerName": kube}]), name=f"explain-{run.id}")
        try:
            create(cp, ns, pod("twin", kube, cpu="2500m"))
            assert kube_message(cp, ns, "twin") == ex["message"]
            # The change explain proposes, applied: kube-scheduler places the pod where explain said it opens.
            tolerant = pod("tolerant", kube, cpu="2500m", tolerations=[{**TAINT, "operator": "Equal"}])
            create(cp, ns, tolerant)
            assert cp.wait_pod_bound(ns, "tolerant") == run.node("b")
        finally:
            kube_sched.stop()
        assert cp.api("GET", f"/api/v1/namespaces/{ns}/pods/wants")["spec"].get("nodeName") is None  # read only


def test_connection_resets_while_reading_the_cluster_change_nothing(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    nobody = f"nobody-{run.id}"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(run.config(profiles=[{"schedulerName": nobody}])))
    with nodes(cp, run, specs()):
        create(cp, ns, pod("busy", nobody, cpu="3", nodeName=run.node("a")))
        create(cp, ns, pod("wants", nobody, cpu="2500m"))
        calm = explain(cp.admin_kubeconfig, config, f"{ns}/wants")
        assert calm.returncode == 0, calm.stderr
        with FaultProxy("127.0.0.1", cp.port or 0) as proxy:
            kubeconfig = proxied_kubeconfig(cp, proxy, tmp_path)
            proxy.delay(0.2)  # every chunk held: the resets land inside requests
            stop = threading.Event()

            def resets() -> None:
                for _ in range(3):  # every open connection reset, three times, a second apart
                    if stop.wait(1.0):
                        return
                    proxy.reset()

            thread = threading.Thread(target=resets, daemon=True)
            thread.start()
            try:
                rough = explain(kubeconfig, config, f"{ns}/wants")
            finally:
                stop.set()
                thread.join()
        assert rough.returncode == 0, rough.stderr
        # Connections cut while open (the /version request and the paged lists are asked again): some were.
        assert proxy.counts.reset >= 1, "no reset landed on an open connection: nothing was tested"
        assert proxy.counts.accepted > 1
        assert json.loads(rough.stdout)["message"] == json.loads(calm.stdout)["message"]
        assert "Traceback" not in rough.stderr


def test_a_silent_api_server_is_a_clear_error_in_bounded_time(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    """The link goes silent (connections accepted, nothing answered): each list request gives up after
    --request-timeout and is asked again; after its attempts, one clear error, no traceback, no hang."""
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    with FaultProxy("127.0.0.1", control_plane.port or 0) as proxy:
        kubeconfig = proxied_kubeconfig(control_plane, proxy, tmp_path)
        proxy.blackhole()
        started = time.monotonic()
        done = explain(kubeconfig, config, f"{kube_namespace}/any", "--request-timeout", "1")
        took = time.monotonic() - started
    assert done.returncode == 2 and done.stdout == "", done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("kubesched: error: reading the cluster:") and "(after 8 attempts)" in last
    assert "Traceback" not in done.stderr and took < 150, took  # ~1 s per attempt, backoff, /version: ~70 s here


def test_an_unreachable_api_server_is_a_clear_error(tmp_path: Path, control_plane: ControlPlane) -> None:
    with FaultProxy("127.0.0.1", control_plane.port or 0) as proxy:
        kubeconfig = proxied_kubeconfig(control_plane, proxy, tmp_path)
    # The proxy is closed: its port refuses connections.
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    started = time.monotonic()
    done = explain(kubeconfig, config, "default/any")
    assert done.returncode == 2 and done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("kubesched: error: reading the cluster:") and "ConnectionRefusedError" in last
    assert "(after 8 attempts)" in last and "Traceback" not in done.stderr
    assert time.monotonic() - started < 100


def test_explain_shows_what_the_running_scheduler_recorded_and_falls_back_when_it_is_gone(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    """`scheduler run` keeps each pod's last decision (here: 1 pod's, to see one pushed out); `explain --scheduler`
    shows it and says so; without a record, or with the scheduler gone, it evaluates afresh with a note."""
    cp, run, ns = control_plane, Run(), kube_namespace
    config = tmp_path / "cfg.yaml"
    config.write_text(yaml.safe_dump(run.config()))
    with nodes(cp, run, specs()), running(cp, tmp_path, run.config(), args=("--decision-records", "1")) as sched:
        create(cp, ns, pod("busy", run.scheduler, cpu="3", nodeName=run.node("a")))
        create(cp, ns, pod("wants", run.scheduler, cpu="2500m"))
        message = kube_message(cp, ns, "wants")  # kubesched's FailedScheduling, as the API server holds it
        record = httpx.get(f"{sched.url}/debug/decisions/{ns}/wants", timeout=5).json()
        assert record["result"] == "Unschedulable" and record["message"] == message and record["attempts"] >= 1

        only = explain_cmd("wants", "-n", ns, "--scheduler", sched.url)
        assert only.returncode == 0, only.stderr
        got = json.loads(only.stdout)
        assert got["recorded"]["message"] == message and got["recorded"]["scheduler"] == sched.url
        assert got["nodes"] == [] and "recorded by the running scheduler" in got["notes"][0]

        both = explain_cmd(
            f"{ns}/wants", "--scheduler", sched.url, "--kubeconfig", str(cp.admin_kubeconfig), "--config", str(config)
        )
        got = json.loads(both.stdout)
        assert got["recorded"]["result"] == "Unschedulable" and got["message"] == message  # afresh: the same
        assert {n["name"] for n in got["nodes"]} >= {run.node("a"), run.node("b"), run.node("c")}

        create(cp, ns, pod("small", run.scheduler, cpu="100m"))  # its decision pushes out the other's
        cp.wait_pod_bound(ns, "small")
        wait_until(
            lambda: httpx.get(f"{sched.url}/debug/decisions/{ns}/wants", timeout=5).status_code == 404, "evicted"
        )
        gone = explain_cmd(
            f"{ns}/wants", "--scheduler", sched.url, "--kubeconfig", str(cp.admin_kubeconfig), "--config", str(config)
        )
        got = json.loads(gone.stdout)
        assert got["recorded"] is None and got["message"] == message
        assert got["notes"][0].startswith(f"the scheduler at {sched.url} has no record: no decision recorded for")
        url = sched.url
    down = explain_cmd(
        f"{ns}/wants", "--scheduler", url, "--kubeconfig", str(cp.admin_kubeconfig), "--config", str(config)
    )
    got = json.loads(down.stdout)
    assert down.returncode == 0 and got["recorded"] is None and "could not be asked" in got["notes"][0]
    nothing = explain_cmd(f"{ns}/wants", "--scheduler", url, "--cluster", str(tmp_path / "none.yaml"))
    assert nothing.returncode == 2 and "none.yaml" in nothing.stderr


def explain_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kubesched", "explain", *args, "-o", "json"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
