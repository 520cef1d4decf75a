"""The plugin guide's example (examples/gpu_policy.py, docs/plugins.md and docs/policies.md) in the custom scheduler
against a real kube-apiserver: loaded through `pluginModules`, reading pod annotations and node labels, scoring the
free GPUs of real nodes. The pods set GPU limits only, as users write them: the API server defaults the requests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import wait_until
from tests.integration.extender_harness import grant_extender_rbac, pod_condition, scheduler
from tests.integration.test_scheduler_e2e import (
    Run,
    create,
    events,
    node_of,
    nodes,
    pod,
    running,
)

pytestmark = pytest.mark.controlplane

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu_policy.py"
MODEL = "gpu.example.com/model"
KUBESCHED = [sys.executable, "-m", "kubesched"]


def gpu_pod(name: str, scheduler: str, model: str, gpus: int) -> dict[str, Any]:
    body = pod(name, scheduler)
    body["metadata"]["annotations"] = {MODEL: model}
    body["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": str(gpus)}
    return body


def test_the_gpu_example_plugins_place_pods_in_a_real_cluster(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    profile = {
        "schedulerName": run.scheduler,
        "plugins": {"multiPoint": {"enabled": [{"name": "GpuModel"}, {"name": "MostFreeGpus", "weight": 10}]}},
        "pluginConfig": [{"name": "MostFreeGpus", "args": {"resource": "nvidia.com/gpu"}}],
    }
    config = run.config(profiles=[profile], extra={"pluginModules": [f"{EXAMPLE}:PLUGINS"]})
    alloc = {"cpu": "32", "memory": "64Gi", "pods": "110"}
    specs = {
        "a100-small": {"labels": {MODEL: "a100"}, "allocatable": {**alloc, "nvidia.com/gpu": "4"}},
        "a100-big": {"labels": {MODEL: "a100"}, "allocatable": {**alloc, "nvidia.com/gpu": "8"}},
        "h100": {"labels": {MODEL: "h100"}, "allocatable": {**alloc, "nvidia.com/gpu": "8"}},
    }
    with nodes(cp, run, specs), running(cp, tmp_path, config):
        # One at a time, so each placement sees the GPUs the previous ones took.
        create(cp, ns, gpu_pod("train-0", run.scheduler, "a100", 6))
        assert wait_until(lambda: node_of(cp, ns, "train-0"), "train-0 bound") == run.node("a100-big")
        create(cp, ns, gpu_pod("train-1", run.scheduler, "a100", 2))  # a100-big has 2 left, a100-small 4
        assert wait_until(lambda: node_of(cp, ns, "train-1"), "train-1 bound") == run.node("a100-small")
        create(cp, ns, gpu_pod("infer-0", run.scheduler, "h100", 1))
        assert wait_until(lambda: node_of(cp, ns, "infer-0"), "infer-0 bound") == run.node("h100")
        create(cp, ns, gpu_pod("legacy-0", run.scheduler, "v100", 1))

        def failed() -> list[dict[str, Any]]:
            return [e for e in events(cp, ns, "legacy-0") if e["reason"] == "FailedScheduling"]

        note = wait_until(failed, "a FailedScheduling event for legacy-0")[0]["note"]
        assert note.startswith("0/") and "3 node(s) didn't have GPU model v100" in note, (
            note
        )  # other runs' nodes may count
        assert node_of(cp, ns, "legacy-0") is None


GPU_NODES = {"docs-a100-small": ("a100", 4), "docs-a100-big": ("a100", 8), "docs-h100": ("h100", 8)}


def test_the_gpu_example_policy_behind_the_real_kube_scheduler(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    """docs/policies.md end to end: `extender serve --policy examples/gpu_policy.py` following the cluster, the
    configuration `config extender --policy …` writes (GPUs managed and ignored by kube-scheduler, bind verb),
    kube-scheduler v1.35.4 calling it."""
    cp, ns = control_plane, kube_namespace
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "extender.log"
    serve = [*KUBESCHED, "extender", "serve", "--policy", str(EXAMPLE), "--kubeconfig", str(grant_extender_rbac(cp))]
    with log.open("ab") as out:  # the child has its own copy of the descriptor
        proc = subprocess.Popen([*serve, "--listen", f"127.0.0.1:{port}"], stdout=out, stderr=subprocess.STDOUT)
    config = tmp_path / "sched.yaml"
    write = ["config", "extender", "--url-prefix", url, "--policy", str(EXAMPLE), "--bind-verb", "bind"]
    subprocess.run([*KUBESCHED, *write, "--weight", "5", "--no-leader-elect", "-o", str(config)], check=True)
    assert "ignoredByScheduler: true" in config.read_text()
    try:
        wait_until(lambda: ready(url), f"the extender ready:\n{log}")
        for name, (model, gpus) in GPU_NODES.items():
            alloc = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
            cp.create_node(name, labels={MODEL: model}, allocatable=alloc)
        with scheduler(cp, config, "docs-gpu"):
            # kube-scheduler ignores GPUs: only the extender's FitsResources keeps 6 off a100-small (4).
            create(cp, ns, gpu_pod("t0", "default-scheduler", "a100", 6))
            assert cp.wait_pod_bound(ns, "t0") == "docs-a100-big"
            # a100-big has 2 left, a100-small 4: MostFreeGpus decides (× weight 5 × 10 in kube-scheduler).
            create(cp, ns, gpu_pod("t1", "default-scheduler", "a100", 2))
            assert cp.wait_pod_bound(ns, "t1") == "docs-a100-small"
            create(cp, ns, gpu_pod("i0", "default-scheduler", "h100", 1))
            assert cp.wait_pod_bound(ns, "i0") == "docs-h100"
            # 2 left on each a100 node: the extender counts the GPUs kube-scheduler ignores, so 3 fit nowhere.
            create(
                cp, ns, gpu_pod("t2", "default-scheduler", "a100", 3), gpu_pod("old", "default-scheduler", "v100", 1)
            )
            full, old = pod_condition(cp, ns, "t2"), pod_condition(cp, ns, "old")
        assert full["reason"] == old["reason"] == "Unschedulable"
        assert "2 Insufficient nvidia.com/gpu" in full["message"], full["message"]
        assert "1 node(s) didn't have GPU model a100" in full["message"], full["message"]
        assert "3 node(s) didn't have GPU model v100" in old["message"], old["message"]
        bound = [json.loads(line) for line in log.read_text().splitlines() if "Successfully bound" in line]
        assert {"pod": f"{ns}/t0", "node": "docs-a100-big"}.items() <= next(
            b for b in bound if b["pod"] == f"{ns}/t0"
        ).items()
    finally:
        proc.terminate()
        proc.wait(10)
        for name in GPU_NODES:
            cp.delete_node(name)


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
