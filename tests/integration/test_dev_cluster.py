"""`kubesched dev-cluster` for real work, as a user runs it: a nodes file with GPUs, zones and taints, `-o json`,
`status`, and kube-scheduler restarted with another config while etcd and kube-apiserver keep running."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from kubesched.testing import build
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.kubeconfig import client_from_kubeconfig
from kubesched.testing.process import ProcessError
from kubesched.testing.waiting import wait_until

pytestmark = pytest.mark.controlplane

NODES = """\
nodes:
- name: gpu
  count: 2
  labels: {topology.kubernetes.io/zone: zone-a, nvidia.com/gpu.product: A100}
  capacity: {cpu: 16, memory: 64Gi, nvidia.com/gpu: 4}
  allocatable: {cpu: 15500m, memory: 60Gi, nvidia.com/gpu: 4}
  taints: ["nvidia.com/gpu=present:NoSchedule"]
- name: cpu-b
  labels: {topology.kubernetes.io/zone: zone-b}
- name: cordoned
  unschedulable: true
---
apiVersion: v1
kind: Node
metadata: {name: full-object, labels: {topology.kubernetes.io/zone: zone-c}}
spec: {podCIDR: 10.244.7.0/24, providerID: fake://full-object}
status:
  capacity: {cpu: "2", memory: 4Gi, example.com/fpga: "1"}
  nodeInfo: {kubeletVersion: v1.35.4, architecture: amd64, operatingSystem: linux}
"""

FIRST_CONFIG = """\
profiles:
- schedulerName: default-scheduler
"""

# Another profile name and a plugin weight: only the restarted kube-scheduler serves "gpu-sched".
SECOND_CONFIG = """\
profiles:
- schedulerName: gpu-sched
  plugins:
    score:
      enabled: [{name: NodeResourcesBalancedAllocation, weight: 7}]
"""

TYPO_CONFIG = """\
profiles:
- schedulerName: typo-sched
  plugins: {score: {enabled: [{name: NodeResourcesFitt, weight: 2}]}}
"""


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesched", "dev-cluster", *args], capture_output=True, text=True, timeout=timeout
    )


def _lines(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


class DevCluster:
    """`dev-cluster up -o json` in its own session; its first stdout line is the state."""

    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubesched", "dev-cluster", "up", "-o", "json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**(env or os.environ), "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
        self.out: queue.Queue[str] = queue.Queue()
        self.err: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.readers = [
            threading.Thread(target=_lines, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=_lines, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def stderr(self) -> str:
        lines = []
        while not self.err.empty():
            lines.append(self.err.get())
        return "".join(lines)

    def state(self, timeout: float = 180) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.out.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    pytest.fail(f"dev-cluster up exited {self.proc.returncode}:\n{self.stderr()}")
                continue
            doc: dict[str, Any] = json.loads(line)  # stdout carries nothing but the JSON document
            return doc
        pytest.fail(f"no JSON state within {timeout:.0f}s:\n{self.stderr()}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # its children die with it (PR_SET_PDEATHSIG)
            code = self.proc.wait()
        for reader in self.readers:  # they end at the pipes' end of file, then the pipes can be closed
            reader.join(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


@pytest.fixture(scope="module")
def cluster(
    control_plane_binaries: build.Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DevCluster, dict[str, Any]]]:
    """One dev-cluster for the module (each start costs ~10 s); the restart test runs last, as written."""
    tmp_path = tmp_path_factory.mktemp("dev-cluster")
    (tmp_path / "nodes.yaml").write_text(NODES)
    (tmp_path / "first.yaml").write_text(FIRST_CONFIG)
    dc = DevCluster("--nodes-file", str(tmp_path / "nodes.yaml"), "--scheduler-config", str(tmp_path / "first.yaml"))
    try:
        yield dc, dc.state()
    finally:
        assert dc.stop() == 0, dc.stderr()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _pod(name: str, scheduler: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": spec.pop("resources", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, "containers": [container], **spec},
    }


def _node_of(client: httpx.Client, name: str, timeout: float = 60) -> str:
    def node() -> str:
        return str(client.get(f"/api/v1/namespaces/default/pods/{name}").json()["spec"].get("nodeName") or "")

    return wait_until(node, f"pod {name} bound", within=timeout)


def test_json_state_names_everything_a_script_needs(
    cluster: tuple[DevCluster, dict[str, Any]], control_plane_binaries: build.Binaries
) -> None:
    _, state = cluster
    assert Path(state["kubeconfig"]).is_file()
    assert Path(state["dataDir"]).is_dir() and Path(state["logsDir"]).is_dir()
    assert state["apiServer"]["url"].startswith("https://127.0.0.1:")
    assert state["apiServer"]["version"] == f"v{build.KUBERNETES_VERSION}"
    assert state["apiServer"]["binary"] == str(control_plane_binaries.kube_apiserver)
    sched = state["scheduler"]
    assert sched["binary"] == str(control_plane_binaries.kube_scheduler)
    assert "schedulerName: default-scheduler" in Path(sched["config"]).read_text()
    assert sched["configSource"].endswith("first.yaml")
    for pid in (state["pid"], state["apiServer"]["pid"], state["etcd"]["pid"], sched["pid"]):
        assert _alive(pid)
    assert state["nodes"] == ["gpu-0", "gpu-1", "cpu-b", "cordoned", "full-object"]
    status = _cli("status", "-o", "json", "--dir", state["dataDir"])
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == state
    with client_from_kubeconfig(Path(state["kubeconfig"])) as client:
        assert client.get("/version").json()["gitVersion"] == state["apiServer"]["version"]


def test_nodes_file_objects_are_stored_as_described(cluster: tuple[DevCluster, dict[str, Any]]) -> None:
    _, state = cluster
    with client_from_kubeconfig(Path(state["kubeconfig"])) as client:
        nodes = {n["metadata"]["name"]: n for n in client.get("/api/v1/nodes").json()["items"]}
    assert set(nodes) == {"gpu-0", "gpu-1", "cpu-b", "cordoned", "full-object"}
    gpu = nodes["gpu-1"]
    assert gpu["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-a"
    assert gpu["metadata"]["labels"]["nvidia.com/gpu.product"] == "A100"
    assert gpu["metadata"]["labels"]["kubernetes.io/hostname"] == "gpu-1"
    assert gpu["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert gpu["status"]["capacity"] == {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}
    assert gpu["status"]["allocatable"] == {"cpu": "15500m", "memory": "60Gi", "nvidia.com/gpu": "4", "pods": "110"}
    assert {c["type"]: c["status"] for c in gpu["status"]["conditions"]}["Ready"] == "True"
    assert nodes["cordoned"]["spec"]["unschedulable"] is True
    assert "taints" not in nodes["cpu-b"]["spec"]
    full = nodes["full-object"]
    assert full["spec"]["podCIDR"] == "10.244.7.0/24" and full["spec"]["providerID"] == "fake://full-object"
    assert full["status"]["allocatable"]["example.com/fpga"] == "1"
    assert full["status"]["nodeInfo"]["kubeletVersion"] == "v1.35.4"


def test_restart_scheduler_with_another_profile(cluster: tuple[DevCluster, dict[str, Any]], tmp_path: Path) -> None:
    dc, state = cluster
    data_dir, before = state["dataDir"], state["scheduler"]
    with client_from_kubeconfig(Path(state["kubeconfig"])) as client:
        gpu_pod = _pod(
            "train",
            "gpu-sched",
            resources={"limits": {"nvidia.com/gpu": "3"}},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        )
        assert client.post("/api/v1/namespaces/default/pods", json=gpu_pod).status_code == 201
        control = _pod("control", "default-scheduler", nodeSelector={"topology.kubernetes.io/zone": "zone-b"})
        assert client.post("/api/v1/namespaces/default/pods", json=control).status_code == 201
        assert _node_of(client, "control") == "cpu-b"  # the first kube-scheduler works...
        assert not client.get("/api/v1/namespaces/default/pods/train").json()["spec"].get("nodeName")  # ...not for it

        (tmp_path / "typo.yaml").write_text(TYPO_CONFIG)
        refused = _cli("restart-scheduler", "--dir", data_dir, "--config", str(tmp_path / "typo.yaml"))
        assert refused.returncode == 2
        assert 'ScorePlugin "NodeResourcesFitt" does not exist' in refused.stderr
        assert str(tmp_path / "typo.yaml") in refused.stderr
        assert "Traceback" not in refused.stderr
        assert _alive(before["pid"])  # the refused config left the running one alone

        (tmp_path / "second.yaml").write_text(SECOND_CONFIG)
        started = time.monotonic()
        done = _cli("restart-scheduler", "--dir", data_dir, "--config", str(tmp_path / "second.yaml"), "-o", "json")
        assert done.returncode == 0, done.stderr
        after = json.loads(done.stdout)
        print(f"restart-scheduler took {time.monotonic() - started:.1f}s (CLI start included)")
        assert after["scheduler"]["pid"] != before["pid"] and not _alive(before["pid"])
        assert after["scheduler"]["configSource"] == str(tmp_path / "second.yaml")
        written = Path(after["scheduler"]["config"]).read_text()
        assert "schedulerName: gpu-sched" in written and "weight: 7" in written
        # etcd and kube-apiserver were not restarted, and the cluster's objects are all there.
        for part in ("apiServer", "etcd"):
            assert after[part] == state[part] and _alive(state[part]["pid"])
        assert len(client.get("/api/v1/nodes").json()["items"]) == 5
        assert _node_of(client, "train") in ("gpu-0", "gpu-1")  # the new profile schedules it
        status = json.loads(_cli("status", "-o", "json", "--dir", data_dir).stdout)
        assert status["scheduler"] == after["scheduler"]
        for name in ("train", "control"):
            client.delete(f"/api/v1/namespaces/default/pods/{name}", params={"gracePeriodSeconds": "0"})
    assert dc.proc.poll() is None, dc.stderr()


def test_bad_nodes_files_fail_before_or_at_the_apiserver(
    control_plane_binaries: build.Binaries, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: a\n  capacity: {gpu: 2}\n  taints: [{key: k, effect: NoSchedul}]\n")
    result = _cli("up", "--nodes-file", str(bad))
    assert result.returncode == 2
    assert f"{bad}: [0].taints[0].effect: must be one of" in result.stderr
    assert "[0].capacity.gpu: unknown resource 'gpu'" in result.stderr
    assert "etcd" not in result.stdout  # refused before anything started
    # A field only the apiserver knows is wrong: strict field validation names it.
    server_side = tmp_path / "server.yaml"
    server_side.write_text("kind: Node\nmetadata: {name: n}\nspec: {podCIDRs: 10.0.0.0/24}\n")
    result = _cli("up", "--nodes-file", str(server_side), timeout=240)
    assert result.returncode == 2, result.stderr
    assert f"{server_side}: the node (n): kube-apiserver refused it: 400" in result.stderr
    assert "Traceback" not in result.stderr
    assert "logs kept" not in result.stderr  # a bad file is no reason to leave the control plane's files behind


CRASHING_WRAPPER = """#!/bin/sh
# kube-scheduler, except that a config naming "fails-at-run" passes the check and then dies at start.
case "$*" in *--write-config-to*) exec {real} "$@";; esac
for arg in "$@"; do
  case "$arg" in
    --config=*) grep -q fails-at-run "${{arg#--config=}}" && {{ echo "simulated crash" >&2; exit 1; }};;
  esac
done
exec {real} "$@"
"""


def test_reconfigure_rolls_back_when_the_new_config_does_not_come_up(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    wrapper = tmp_path / "kube-scheduler"
    wrapper.write_text(CRASHING_WRAPPER.format(real=control_plane.binaries.kube_scheduler))
    wrapper.chmod(0o755)
    name = f"rollback-{uuid.uuid4().hex[:6]}"
    node = f"{name}-node"
    sched = control_plane.start_scheduler({"profiles": [{"schedulerName": f"{name}-old"}]}, name=name)
    sched.binary = wrapper
    control_plane.create_node(node)
    try:
        with pytest.raises(ProcessError, match="back on the previous one") as err:
            control_plane.reconfigure_scheduler(name, {"profiles": [{"schedulerName": "fails-at-run"}]})
        assert "simulated crash" in str(err.value)
        assert sched.running
        assert "fails-at-run" not in sched.config_path.read_text()
        pod = _pod("p", f"{name}-old", nodeSelector={"kubernetes.io/hostname": node})
        control_plane.api("POST", f"/api/v1/namespaces/{kube_namespace}/pods", pod)
        assert control_plane.wait_pod_bound(kube_namespace, "p") == node  # the previous config schedules again
    finally:
        sched.stop()
        control_plane.delete_node(node)
