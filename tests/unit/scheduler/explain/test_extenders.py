"""explain with extenders in the configuration: their verdicts per node and their scores, from a real
`kubesched extender serve` process; their bind is never called (explain changes nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubesched.scheduler.explain.offline import explain_file
from tests.docs.test_examples import ROOT, serve


@pytest.fixture(scope="module")
def gpu_extender() -> Iterator[str]:
    with serve("examples/gpu_policy.py", "examples/gpu-cluster.yaml") as url:
        yield url


def config(tmp_path: Path, url: str, bind: bool = False) -> Path:
    extender = {
        "urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 2,
        "nodeCacheCapable": True, "managedResources": [{"name": "nvidia.com/gpu", "ignoredByScheduler": True}],
    }  # fmt: skip
    if bind:
        extender["bindVerb"] = "bind"  # the extender was started without --bind: a bind would fail
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "extenders": [extender],
            }
        )
    )
    return path


CLUSTER = ROOT / "examples" / "gpu-cluster.yaml"


def test_the_extenders_rejections_are_each_nodes_reported_reason(gpu_extender: str, tmp_path: Path) -> None:
    ex = explain_file(CLUSTER, "ml/legacy-0", config=config(tmp_path, gpu_extender))
    assert ex.node is None
    reported = {n.name: n.reported for n in ex.nodes}
    # nvidia.com/gpu is the extender's (ignoredByScheduler): every node passes the plugins, the extender decides.
    assert {name for name, r in reported.items() if r is not None and r.plugin == "Extender"} == {
        "a100-small", "a100-big", "h100", "cpu-only",
    }  # fmt: skip
    assert {r.reason for r in reported.values() if r is not None} == {"node(s) didn't have GPU model v100"}
    assert ex.message.startswith(
        "0/4 nodes are available: 4 node(s) didn't have GPU model v100."
    )  # the cycle asked it too


def test_the_extenders_scores_join_the_total_and_bind_is_never_asked(gpu_extender: str, tmp_path: Path) -> None:
    ex = explain_file(CLUSTER, "ml/train-0", config=config(tmp_path, gpu_extender, bind=True))
    assert ex.node == "a100-big"  # bound in memory: the extender (no --bind) was not asked to bind
    scored = {n.name: n for n in ex.nodes if n.scored}
    assert set(scored) == {"a100-small", "a100-big"}  # h100 is the wrong model, cpu-only has no GPU
    ext = {name: next(s for s in n.scores if s.plugin == "extenders") for name, n in scored.items()}
    assert ext["a100-big"].weighted > ext["a100-small"].weighted  # the most free GPUs, times weight 2 × 10
    assert all(n.total == sum(s.weighted for s in n.scores) for n in scored.values())


def test_an_unreachable_extender_is_noted_and_the_cycles_error_is_the_message(tmp_path: Path) -> None:
    ex = explain_file(CLUSTER, "ml/train-0", config=config(tmp_path, "http://127.0.0.1:1"))
    assert ex.node is None and any(n.startswith("a filter extender failed:") for n in ex.notes)
    assert "127.0.0.1:1" in ex.message
