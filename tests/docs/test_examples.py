"""The examples the docs teach from, run as a user runs them: the GPU policy served by `extender serve`
on a node file, the same plugins in `scheduler run --cluster`, the licensed-zone policy."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesched.cli.main import main
from kubesched.testing.process import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MODEL = "gpu.example.com/model"


@contextmanager
def running(*args: str, scheme: str = "http", verify: bool | ssl.SSLContext = True) -> Iterator[str]:
    """``kubesched ARGS --listen 127.0.0.1:PORT`` in a process of its own, once its /readyz answers 200."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "kubesched", *args, "--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"{scheme}://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/readyz", verify=verify).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr and proc.poll() is not None else ""
                raise AssertionError(f"{' '.join(args)} did not become ready: {err}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


def serve(policy: str, nodes: str) -> contextlib.AbstractContextManager[str]:
    return running("extender", "serve", "--policy", policy, "--nodes", nodes)


@pytest.fixture(scope="module")
def gpu_extender() -> Iterator[str]:
    with serve("examples/gpu_policy.py", "examples/gpu-cluster.yaml") as url:
        yield url


def gpu_pod(model: str | None, gpus: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ml", "uid": "uid-p"}
    if model:
        meta["annotations"] = {MODEL: model}
    res = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "resources": res}]}}


ALL = ["a100-small", "a100-big", "h100", "cpu-only"]


def test_gpu_policy_filters_by_the_pods_annotated_model(gpu_extender: str) -> None:
    out = httpx.post(f"{gpu_extender}/filter", json={"Pod": gpu_pod("a100", 4), "NodeNames": ALL}).json()
    assert out["NodeNames"] == ["a100-small", "a100-big"]
    assert out["FailedAndUnresolvableNodes"] == {
        "h100": "node(s) didn't have GPU model a100",
        "cpu-only": "node(s) didn't have GPU model a100",
    }
    assert out["FailedNodes"] == {}


def test_gpu_policy_counts_the_running_pods_gpus(gpu_extender: str) -> None:
    """a100-big has 8 GPUs, 2 taken by the file's running pod: 7 do not fit there now (resolvable, preemption
    may help); a100-small has only 4 at all (unresolvable, as kube-scheduler's NodeResourcesFit says)."""
    out = httpx.post(f"{gpu_extender}/filter", json={"Pod": gpu_pod("a100", 7), "NodeNames": ALL[:2]}).json()
    assert out["NodeNames"] == []
    assert out["FailedNodes"] == {"a100-big": "Insufficient nvidia.com/gpu"}
    assert out["FailedAndUnresolvableNodes"] == {"a100-small": "Insufficient nvidia.com/gpu"}


def test_gpu_policy_without_annotation_passes_every_node_with_room(gpu_extender: str) -> None:
    out = httpx.post(f"{gpu_extender}/filter", json={"Pod": gpu_pod(None, 1), "NodeNames": ALL}).json()
    assert out["NodeNames"] == ["a100-small", "a100-big", "h100"]
    assert out["FailedAndUnresolvableNodes"] == {"cpu-only": "Insufficient nvidia.com/gpu"}  # it has none at all


def test_gpu_policy_prefers_the_most_free_gpus(gpu_extender: str) -> None:
    """Free: a100-small 4, a100-big 6, h100 8 -> normalized 50, 75, 100 -> the protocol's 0-10."""
    out = httpx.post(f"{gpu_extender}/prioritize", json={"Pod": gpu_pod(None, 1), "NodeNames": ALL[:3]}).json()
    assert out == [{"Host": "a100-small", "Score": 5}, {"Host": "a100-big", "Score": 7}, {"Host": "h100", "Score": 10}]


def test_licensed_policy_serves_on_the_example_nodes() -> None:
    with serve("examples/licensed_policy.py", "examples/nodes.yaml") as url:
        out = httpx.post(f"{url}/filter", content=(EXAMPLES / "filter-request.json").read_bytes()).json()
        assert out["NodeNames"] == ["gpu-a"]
        assert out["FailedAndUnresolvableNodes"] == {
            "cordoned": "node(s) are in an unlicensed zone",  # no zone label
            "plain": "node(s) are in an unlicensed zone",
            "gpu-b": "Insufficient example.com/custom-resource",  # 3 wanted, 2 allocatable: NodeResourcesFit
        }


def test_gpu_plugins_in_the_scheduler_on_the_example_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(EXAMPLES / "gpu-scheduler-config.yaml")
    code = main(["scheduler", "run", "--config", config, "--cluster", str(EXAMPLES / "gpu-cluster.yaml"), "-o", "json"])
    placements = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["placements"]}
    assert code == 0
    # MostFreeGpus: a100-big (6 free) before a100-small (4); then a100-big has 2 left, a100-small 4.
    assert placements["ml/train-0"]["node"] == "a100-big"
    assert placements["ml/train-1"]["node"] == "a100-small"
    assert placements["ml/infer-0"]["node"] == "h100"
    assert placements["ml/huge-0"]["node"] is None
    assert placements["ml/huge-0"]["reason"].startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    assert placements["ml/legacy-0"]["node"] is None
    assert placements["ml/legacy-0"]["reason"].startswith(
        "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't have GPU model v100."
    )


def test_the_webhook_quick_start_routes_the_example_review(tmp_path: Path) -> None:
    """docs/zh-CN/README.md: certs, webhook serve on the example rules and nodes, /mutate on the example review."""
    certs = tmp_path / "certs"
    assert (
        main(
            [
                "certs",
                "--out",
                str(certs),
                "--service",
                "kubesched-webhook",
                "--namespace",
                "kubesched",
                "--ip",
                "127.0.0.1",
            ]
        )
        == 0
    )
    args = ["webhook", "serve", "--config", "examples/webhook-config.yaml", "--nodes", "examples/nodes.yaml"]
    tls = ["--tls-cert", str(certs / "tls.crt"), "--tls-key", str(certs / "tls.key")]
    ca = ssl.create_default_context(cafile=certs / "ca.crt")
    with running(*args, *tls, scheme="https", verify=ca) as url:
        review = (EXAMPLES / "admission-review.json").read_bytes()
        headers = {"Content-Type": "application/json"}
        answer = httpx.post(f"{url}/mutate", content=review, headers=headers, verify=ca).json()["response"]
        assert answer["allowed"] is True
        patch = {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}
        assert patch["/spec/schedulerName"] == "kubesched"
        assert patch["/spec/nodeSelector"] == {"pool": "batch"}
        answer = httpx.post(f"{url}/validate", content=review, headers=headers, verify=ca).json()["response"]
        assert answer["allowed"] is True
