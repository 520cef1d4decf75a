"""Running our extender and a kube-scheduler configured by `kubesched config extender`, for e2e tests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from kubesched.testing.builders import pod_manifest
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.scheduler import KubeScheduler
from kubesched.testing.waiting import WaitTimeout, wait_until

RES = "example.com/custom-resource"
EXTENDER_USER = "kubesched-extender"


def grant_extender_rbac(cp: ControlPlane) -> Path:
    """Least privilege for the extender: read nodes and pods, create bindings. Returns its kubeconfig."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": EXTENDER_USER},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": EXTENDER_USER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EXTENDER_USER},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": EXTENDER_USER}],
    }
    for path, obj in (("clusterroles", role), ("clusterrolebindings", binding)):
        if cp.get_or_none(f"/apis/rbac.authorization.k8s.io/v1/{path}/{EXTENDER_USER}") is None:
            cp.api("POST", f"/apis/rbac.authorization.k8s.io/v1/{path}", obj)
    return cp.kubeconfig(EXTENDER_USER)


class Extender:
    """`kubesched extender serve --policy custom-label` as a child process, following the cluster."""

    def __init__(self, kubeconfig: Path, workdir: Path, port: int | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.port = port or free_port()
        self.log = workdir / f"extender-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready: bool = True) -> Extender:
        """Start and wait until /readyz answers 200 (with ``ready=False``: until /healthz does)."""
        cmd = [
            sys.executable,
            "-m",
            "kubesched",
            "extender",
            "serve",
            "--policy",
            "custom-label",
            "--kubeconfig",
            str(self.kubeconfig),
            "--listen",
            f"127.0.0.1:{self.port}",
            "--log-format",
            "text",
        ]
        with self.log.open("ab") as out:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        proc = self.proc

        def alive() -> None:
            if proc.poll() is not None:
                raise RuntimeError(f"extender exited {proc.returncode}:\n{self.log.read_text()[-3000:]}")

        def answers() -> bool:
            with contextlib.suppress(httpx.HTTPError):
                return httpx.get(f"{self.url}/{'readyz' if ready else 'healthz'}", timeout=2).status_code == 200
            return False

        try:
            wait_until(answers, "the extender to be ready", within=30, interval=0.2, alive=alive)
        except WaitTimeout:
            raise TimeoutError(f"extender not ready:\n{self.log.read_text()[-3000:]}") from None
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def metric(self, name: str, **labels: str) -> float:
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in text.splitlines():
            if line.startswith(f"{name}{{{want}}} ") or (not labels and line.startswith(f"{name} ")):
                return float(line.rsplit(" ", 1)[1])
        return 0.0


def generated_config(workdir: Path, url: str, *args: str) -> Path:
    """The KubeSchedulerConfiguration `kubesched config extender` prints (so kube-scheduler tests it)."""
    out = workdir / f"sched-{abs(hash((url, args)))}.yaml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesched",
            "config",
            "extender",
            "--url-prefix",
            url,
            "--policy",
            "custom-label",
            "--no-leader-elect",
            "-o",
            str(out),
            *args,
        ],
        check=True,
    )
    return out


@contextlib.contextmanager
def scheduler(cp: ControlPlane, config: Path, name: str) -> Iterator[KubeScheduler]:
    sched = cp.start_scheduler(config, name=f"{name}-{free_port()}")
    try:
        yield sched
    finally:
        sched.stop()


def make_pod(name: str, need: int, *, priority_class: str | None = None) -> dict[str, Any]:
    """A pod asking for ``need`` units of the managed resource."""
    return pod_manifest(
        name, requests={"cpu": "10m", RES: str(need)}, limits={RES: str(need)}, priority_class=priority_class
    )


def pod_condition(cp: ControlPlane, ns: str, name: str, timeout: float = 30) -> dict[str, Any]:
    """Wait for the pod's PodScheduled condition to be False and return it."""

    def unschedulable() -> dict[str, Any] | None:
        pod = cp.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        for cond in pod.get("status", {}).get("conditions", []) or []:
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return dict(cond)
        return None

    return wait_until(unschedulable, f"pod {ns}/{name} to have PodScheduled=False", within=timeout, interval=0.2)


def failed_attempts(sched: KubeScheduler, ns: str, name: str) -> int:
    """How often kube-scheduler logged an error scheduling the pod (each is one attempt)."""
    lines = sched.tail(1000).splitlines()
    return sum("Error scheduling pod; retrying" in line and f'pod="{ns}/{name}"' in line for line in lines)
