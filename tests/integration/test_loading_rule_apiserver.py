"""The one loading rule against the real kube-apiserver: `extender serve` and `scheduler run` find the cluster from
$KUBECONFIG alone (two files merged as client-go merges them) and from ~/.kube/config, as kubectl does; with
`-v 2`, `scheduler run` logs kube-scheduler's "Unable to schedule pod; no fit; waiting" with the reason."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from kubesched.testing.builders import pod_manifest
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import WaitTimeout, wait_until

pytestmark = pytest.mark.controlplane


def no_cluster_env(home: Path) -> dict[str, str]:
    """The environment without any cluster: no $KUBECONFIG, not in a pod, an empty home."""
    away = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
    home.mkdir(parents=True, exist_ok=True)
    return {**{k: v for k, v in os.environ.items() if k not in away}, "HOME": str(home)}


def split_kubeconfig(cp: ControlPlane, tmp_path: Path) -> tuple[Path, Path]:
    """The admin kubeconfig as two files: the first holds only a context (and current-context) naming the second's
    cluster and user, the second everything else (its own current-context names a context that does not exist)."""
    doc = yaml.safe_load(cp.admin_kubeconfig.read_text())
    cluster, user = doc["clusters"][0]["name"], doc["users"][0]["name"]
    first = tmp_path / "contexts.yaml"
    first.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "merged",
                "contexts": [{"name": "merged", "context": {"cluster": cluster, "user": user}}],
            }
        )
    )
    second = tmp_path / "credentials" / "admin.yaml"
    second.parent.mkdir()
    second.write_text(yaml.safe_dump({**doc, "contexts": [], "current-context": "nowhere"}))
    second.chmod(0o600)
    return first, second


@contextlib.contextmanager
def child(cmd: list[str], env: dict[str, str], log: Path, ready_url: str) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubesched", *cmd], stdout=out, stderr=subprocess.STDOUT, env=env
        )

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(ready_url, timeout=2).status_code == 200
        return False

    try:
        wait_until(ready, f"{' '.join(cmd[:2])} ready", within=60, interval=0.2)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def test_extender_serve_finds_the_cluster_from_kubeconfig_env_alone(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    first, second = split_kubeconfig(control_plane, tmp_path)
    env = {**no_cluster_env(tmp_path / "home"), "KUBECONFIG": os.pathsep.join([str(first), str(second)])}
    node = f"lr-{uuid.uuid4().hex[:8]}"
    control_plane.create_node(node, labels={"custom": "yes"})
    port = free_port()
    log = tmp_path / "extender.log"
    cmd = ["extender", "serve", "--policy", "custom-label", "--listen", f"127.0.0.1:{port}", "--log-format", "text"]
    try:
        with child(cmd, env, log, f"http://127.0.0.1:{port}/readyz"):
            text = log.read_text()
            assert f'"authenticated to {control_plane.url} as kubesched-admin"' in text, text
            assert "node cache follows" in text
            request = {
                "Pod": pod_manifest("p", scheduler="default-scheduler", requests={"cpu": "100m"}),
                "NodeNames": [node, "not-a-node"],
            }
            answer = httpx.post(f"http://127.0.0.1:{port}/filter", json=request, timeout=10).json()
            assert answer["NodeNames"] == [node], answer  # a node of the cluster it found, labelled `custom`
    finally:
        control_plane.delete_node(node)


def test_scheduler_run_finds_the_cluster_in_the_home_kubeconfig_and_logs_unable_to_schedule_at_v2(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = no_cluster_env(home)
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_bytes(control_plane.admin_kubeconfig.read_bytes())
    run = "r" + uuid.uuid4().hex[:7]
    scheduler = f"kubesched-{run}"
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": scheduler}],
            }
        )
    )
    port = free_port()
    log = tmp_path / "scheduler.log"
    cmd = ["scheduler", "run", "--config", str(config), "--listen", f"127.0.0.1:{port}", "-v", "2", "--log-format"]
    node = f"lr-{run}"
    control_plane.create_node(node)
    with contextlib.ExitStack() as stack:
        stack.callback(control_plane.delete_node, node)
        stack.enter_context(child([*cmd, "text"], env, log, f"http://127.0.0.1:{port}/readyz"))
        huge = pod_manifest("huge", scheduler=scheduler, requests={"cpu": "100000"})
        control_plane.api("POST", f"/api/v1/namespaces/{kube_namespace}/pods", huge)
        line = f'"Unable to schedule pod; no fit; waiting" pod="{kube_namespace}/huge" err="0/'

        def logged() -> str | None:
            return next((ln for ln in log.read_text().splitlines() if line in ln), None)

        try:
            found = wait_until(logged, "the V(2) line of an unschedulable pod", within=30)
        except WaitTimeout:
            pytest.fail(f"no {line} in:\n{log.read_text()[-4000:]}")
        assert found.startswith("I") and "nodes are available: " in found and "Insufficient cpu" in found, found
        assert f'"authenticated to {control_plane.url} as kubesched-admin"' in log.read_text()


def test_scheduler_run_finds_the_cluster_from_kubeconfig_env_alone(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    first, second = split_kubeconfig(control_plane, tmp_path)
    env = {**no_cluster_env(tmp_path / "home"), "KUBECONFIG": os.pathsep.join([str(first), str(second)])}
    port = free_port()
    log = tmp_path / "scheduler.log"
    config = tmp_path / "config.yaml"
    name = "r" + uuid.uuid4().hex[:7]
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": f"kubesched-{name}"}],
            }
        )
    )
    cmd = ["scheduler", "run", "--config", str(config), "--listen", f"127.0.0.1:{port}", "--log-format", "text"]
    with child(cmd, env, log, f"http://127.0.0.1:{port}/readyz"):
        assert f'"authenticated to {control_plane.url} as kubesched-admin"' in log.read_text()


def test_without_any_cluster_both_say_what_to_pass(tmp_path: Path) -> None:
    env = no_cluster_env(tmp_path / "home")
    for cmd, also in (
        (["extender", "serve", "--policy", "custom-label"], "or --nodes FILE"),
        (["scheduler", "run"], ""),
        (["snapshot", "-o", str(tmp_path / "c.yaml")], ""),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "kubesched", *cmd], capture_output=True, text=True, timeout=60, env=env
        )
        assert out.returncode == 2, out.stderr
        assert "kubesched: error: no cluster to talk to: give --kubeconfig FILE, set KUBECONFIG=FILE" in out.stderr
        assert also in out.stderr and "Traceback" not in out.stderr
