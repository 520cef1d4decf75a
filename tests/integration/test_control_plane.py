"""The real-control-plane harness end to end: etcd + kube-apiserver + kube-scheduler as child processes."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.cluster.kubeclient import APIError
from kubesched.testing import build
from kubesched.testing.builders import pod_manifest
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.kubeconfig import client_from_kubeconfig
from kubesched.testing.process import port_open
from kubesched.testing.waiting import wait_until
from kubesched.versions import Release

pytestmark = pytest.mark.controlplane

MINIMAL_SCHEDULER = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [{"schedulerName": "default-scheduler"}],
}


def _pod(name: str, node: str, cpu: str = "100m") -> dict[str, Any]:
    # Pinned by label so pods of other tests' nodes do not matter.
    return pod_manifest(name, requests={"cpu": cpu}, nodeSelector={"kubernetes.io/hostname": node})


@pytest.fixture
def node(control_plane: ControlPlane) -> Iterator[str]:
    name = f"node-{uuid.uuid4().hex[:8]}"
    control_plane.create_node(name)
    yield name
    control_plane.delete_node(name)


@pytest.mark.all_kubernetes_versions
def test_apiserver_and_scheduler_report_their_release(control_plane: ControlPlane, kubernetes_version: Release) -> None:
    """The harness builds and runs each supported release: the API server's /version and kube-scheduler's
    --version say which."""
    info = control_plane.api("GET", "/version")
    assert info["gitVersion"] == f"v{kubernetes_version.version}"
    assert f"{info['major']}.{info['minor']}" == kubernetes_version.minor
    printed = subprocess.run(
        [str(control_plane.binaries.kube_scheduler), "--version"], capture_output=True, text=True, timeout=60
    ).stdout
    assert printed.strip() == f"Kubernetes v{kubernetes_version.version}"


def test_node_status_is_stored(control_plane: ControlPlane) -> None:
    name = f"node-{uuid.uuid4().hex[:8]}"
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "20", "example.com/gpu": "2"}
    created = control_plane.create_node(
        name,
        labels={"topology.kubernetes.io/zone": "z1"},
        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        allocatable=allocatable,
    )
    try:
        assert created["status"]["allocatable"] == allocatable
        got = control_plane.api("GET", f"/api/v1/nodes/{name}")
        assert got["status"]["allocatable"] == allocatable
        assert got["status"]["capacity"] == allocatable
        conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
        assert conditions["Ready"] == "True"
        assert got["metadata"]["labels"]["kubernetes.io/hostname"] == name
        assert got["metadata"]["labels"]["topology.kubernetes.io/zone"] == "z1"
        # Only our taint: TaintNodesByCondition is off, so no node.kubernetes.io/not-ready taint appears.
        assert [t["key"] for t in got["spec"]["taints"]] == ["dedicated"]
    finally:
        control_plane.delete_node(name)
    with pytest.raises(APIError) as err:
        control_plane.api("GET", f"/api/v1/nodes/{name}")
    assert err.value.status == 404


def test_client_certificates_map_to_rbac_identities(control_plane: ControlPlane) -> None:
    with client_from_kubeconfig(control_plane.kubeconfig("nobody", ["some-team"])) as nobody:
        denied = nobody.get("/api/v1/nodes")
    assert denied.status_code == 403
    assert 'User "nobody"' in denied.json()["message"]
    with client_from_kubeconfig(control_plane.kubeconfig("system:kube-scheduler")) as sched:
        assert sched.get("/api/v1/nodes").status_code == 200
    with client_from_kubeconfig(control_plane.admin_kubeconfig) as admin:
        assert admin.get("/api/v1/nodes").status_code == 200


def test_kube_scheduler_binds_a_pod(control_plane: ControlPlane, kube_namespace: str, node: str) -> None:
    sched = control_plane.start_scheduler(MINIMAL_SCHEDULER, name="binds-a-pod")
    try:
        control_plane.api("POST", f"/api/v1/namespaces/{kube_namespace}/pods", _pod("probe", node))
        assert control_plane.wait_pod_bound(kube_namespace, "probe") == node

        # kube-scheduler writes the event after the binding, asynchronously: poll for it.
        def scheduled_event() -> bool:
            events = control_plane.api("GET", f"/api/v1/namespaces/{kube_namespace}/events")["items"]
            return any(e["reason"] == "Scheduled" and e["involvedObject"]["name"] == "probe" for e in events)

        wait_until(scheduled_event, "a Scheduled event for probe", within=20, interval=0.2)
    finally:
        sched.stop()


def test_scheduler_can_be_stopped_and_restarted(control_plane: ControlPlane, kube_namespace: str, node: str) -> None:
    sched = control_plane.start_scheduler(MINIMAL_SCHEDULER, name="restartable")
    first_pid = sched.pid
    sched.stop()
    assert not sched.running
    try:
        control_plane.api("POST", f"/api/v1/namespaces/{kube_namespace}/pods", _pod("waits", node))
        # The process was reaped above: nothing of it can bind the pod, so no wait (and none would prove more).
        pod = control_plane.api("GET", f"/api/v1/namespaces/{kube_namespace}/pods/waits")
        assert not pod["spec"].get("nodeName"), "bound with no scheduler running"
        sched.restart()
        assert sched.running and sched.pid != first_pid
        assert control_plane.wait_pod_bound(kube_namespace, "waits") == node
    finally:
        sched.stop()


def _read_lines(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


def _wait_line(lines: queue.Queue[str], seen: list[str], pattern: str, timeout: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        seen.append(line)
        if found := re.search(pattern, line):
            return found
    pytest.fail(f"no line matching {pattern!r} within {timeout:.0f}s; output:\n{''.join(seen)}")


def test_dev_cluster_up_subprocess(control_plane_binaries: build.Binaries) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched", "dev-cluster", "up", "--nodes", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,  # our SIGINT goes to it alone, like a Ctrl-C in its own terminal
    )
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []
    reader = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
    reader.start()
    try:
        etcd_port = int(_wait_line(lines, seen, r"etcd http://127\.0\.0\.1:(\d+)", 180).group(1))
        api_port = int(_wait_line(lines, seen, r"kube-apiserver https://127\.0\.0\.1:(\d+)", 180).group(1))
        sched_port = int(_wait_line(lines, seen, r"kube-scheduler https://127\.0\.0\.1:(\d+)", 120).group(1))
        kubeconfig = Path(_wait_line(lines, seen, r"^export KUBECONFIG=(\S+)$", 120).group(1))
        with client_from_kubeconfig(kubeconfig) as client:
            nodes = client.get("/api/v1/nodes").json()["items"]
        assert sorted(n["metadata"]["name"] for n in nodes) == ["node-0", "node-1"]
        assert all(n["status"]["allocatable"]["cpu"] == "8" for n in nodes)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, "".join(seen)
        for port in (etcd_port, api_port, sched_port):
            assert not port_open(port), f"port {port} still open after dev-cluster exited"
        assert not kubeconfig.exists(), "working directory not cleaned up"
    finally:
        if proc.poll() is None:
            proc.kill()  # its children die with it (PR_SET_PDEATHSIG)
            proc.wait()
        reader.join(10)  # it stops at the end of the output
        if proc.stdout is not None:
            proc.stdout.close()


# The harness is no pytest11 entry point: an inner pytest (outside this project's addopts) asks for it.
PLUGIN = "kubesched.testing.pytest_plugin"

FAILING_SUITE = """
import pytest

@pytest.mark.controlplane
def test_fails(control_plane):
    assert control_plane.api("GET", "/version")["gitVersion"] == "no such version"
"""


def test_failed_test_keeps_control_plane_logs(control_plane_binaries: build.Binaries, tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(FAILING_SUITE)
    env = {k: v for k, v in os.environ.items() if k != "KUBESCHED_KEEP_LOGS"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PLUGIN, str(tmp_path / "test_inner.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    found = re.search(r"kubesched control-plane logs kept in (\S+)", result.stdout)
    assert found, result.stdout
    logs = Path(found.group(1))
    try:
        assert {"etcd.log", "kube-apiserver.log"} <= {p.name for p in logs.iterdir()}
        assert "--secure-port=" in (logs / "kube-apiserver.log").read_text()
    finally:
        shutil.rmtree(logs.parent)
