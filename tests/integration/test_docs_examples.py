"""The plugin guide's example (examples/gpu_policy.py, docs/plugins.md and docs/policies.md) in the custom scheduler
against a real kube-apiserver: loaded through `pluginModules`, reading pod annotations and node labels, scoring the
free GPUs of real nodes. The pods set GPU limits only, as users write them: the API server defaults the requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.controlplane import ControlPlane
from tests.integration.test_scheduler_e2e import Run, create, events, eventually, node_of, nodes, pod, running

pytestmark = pytest.mark.controlplane

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu_policy.py"
MODEL = "gpu.example.com/model"


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
        assert eventually(lambda: node_of(cp, ns, "train-0"), "train-0 bound") == run.node("a100-big")
        create(cp, ns, gpu_pod("train-1", run.scheduler, "a100", 2))  # a100-big has 2 left, a100-small 4
        assert eventually(lambda: node_of(cp, ns, "train-1"), "train-1 bound") == run.node("a100-small")
        create(cp, ns, gpu_pod("infer-0", run.scheduler, "h100", 1))
        assert eventually(lambda: node_of(cp, ns, "infer-0"), "infer-0 bound") == run.node("h100")
        create(cp, ns, gpu_pod("legacy-0", run.scheduler, "v100", 1))

        def failed() -> list[dict[str, Any]]:
            return [e for e in events(cp, ns, "legacy-0") if e["reason"] == "FailedScheduling"]

        note = eventually(failed, "a FailedScheduling event for legacy-0")[0]["note"]
        assert note.startswith("0/") and "3 node(s) didn't have GPU model v100" in note, (
            note
        )  # other runs' nodes may count
        assert node_of(cp, ns, "legacy-0") is None
