"""`kubesched simulate`: the command on the examples, its JSON, --compare, and its errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
SCENARIO = str(ROOT / "examples" / "scenario.yaml")
BINPACK = str(ROOT / "examples" / "binpack-config.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["simulate", *argv])
    except SystemExit as end:
        code = int(end.code or 0)
    got = capsys.readouterr()
    return code, got.out, got.err


def test_json_is_the_schema_with_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--cluster", CLUSTER, "--scenario", SCENARIO, "-o", "json", "--seed", "3")
    doc = json.loads(out)
    assert code == 0 and doc["apiVersion"] == "kubesched.io/v1alpha1" and doc["kind"] == "Simulation"
    assert doc["seed"] == 3 and doc["scenarioName"] == "gpu-burst" and doc["comparison"] is None
    (a,) = doc["runs"]
    assert [s["index"] for s in a["steps"]] == list(range(6))
    replay = a["steps"][0]
    assert {d["pod"] for d in replay["decisions"]} >= {"shop/web-0", "ops/critical-0", "ml/huge-0"}
    (preempted,) = replay["preemptions"]
    assert preempted["victim"] == "jobs/batch-0" and preempted["preemptor"] == "ops/critical-0"
    assert preempted["node"] == "node-b" and preempted["message"].startswith("0/4 nodes are available:")
    huge = next(d for d in replay["decisions"] if d["pod"] == "ml/huge-0")
    assert huge["node"] is None and huge["message"].startswith("0/4 nodes are available:")
    gpu = next(n for n in a["steps"][1]["nodes"] if n["name"] == "gpu-0")
    assert gpu["zone"] == "zone-a" and gpu["resources"]["example.com/gpu"] == {"requested": 2, "allocatable": 8}
    assert a["steps"][3]["actions"][0].startswith("drain: 1 node(s) node-b;")


def test_the_same_seed_prints_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "--cluster", CLUSTER, "--scenario", SCENARIO, "-o", "json")
    second = run(capsys, "--cluster", CLUSTER, "--scenario", SCENARIO, "-o", "json")
    assert first == second and first[0] == 0


def test_compare_reports_pods_and_aggregates(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--cluster", CLUSTER, "--scenario", SCENARIO, "--compare", BINPACK, "-o", "json")
    doc = json.loads(out)
    assert code == 0 and [r["label"] for r in doc["runs"]] == ["A", "B"] and doc["runs"][1]["config"] == BINPACK
    c = doc["comparison"]
    assert c["same"] + len(c["pods"]) == len(doc["runs"][0]["final"])
    assert {"podsPlaced", "nodesUsed", "preemptions", "cpu.p50", "memory.p99", "example.com/gpu.stranded"} <= {
        d["metric"] for d in c["aggregate"]
    }
    for diff in c["pods"]:
        assert diff["a"] != diff["b"]
    code, text, _ = run(capsys, "--cluster", CLUSTER, "--scenario", SCENARIO, "--compare", BINPACK)
    assert code == 0 and "Comparison (B - A, after the last step):" in text and "Run B: " in text


def test_records_off(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--cluster", CLUSTER, "--scenario", SCENARIO, "-o", "json", "--no-records")
    doc = json.loads(out)
    assert code == 0 and doc["records"] is False
    assert all(not s["decisions"] and not s["nodes"] for s in doc["runs"][0]["steps"])
    assert doc["runs"][0]["steps"][-1]["aggregate"]["podsPlaced"] > 0


def test_bad_inputs_are_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("steps:\n- addPods: {replicas: 5000000, name: w, template: {spec: {}}}\n")
    code, out, err = run(capsys, "--cluster", CLUSTER, "--scenario", str(bad))
    assert code == 2 and out == ""
    assert (
        err == f"kubesched: error: {bad} is invalid (1 problem):\n"
        "  steps[0].addPods.replicas: 5000000 exceeds the limit 100000\n"
    )
    bad.write_text("steps:\n- drain: [node-z]\n")
    code, _, err = run(capsys, "--cluster", CLUSTER, "--scenario", str(bad))
    assert code == 2 and err == f"kubesched: error: {bad}: steps[0].drain.names[0]: no node 'node-z' in the cluster\n"
    code, _, err = run(capsys, "--cluster", CLUSTER, "--scenario", str(tmp_path / "none.yaml"))
    assert code == 2 and "cannot read" in err and "Traceback" not in err
    code, _, err = run(capsys, "--cluster", CLUSTER, "--scenario", SCENARIO, "--compare", str(tmp_path / "b.yaml"))
    assert code == 2 and err.startswith("kubesched: error: --compare: no such file")
    pc = tmp_path / "pc.yaml"
    pc.write_text("steps:\n- addPods: {replicas: 1, name: w, template: {spec: {priorityClassName: gold}}}\n")
    code, _, err = run(capsys, "--cluster", CLUSTER, "--scenario", str(pc))
    assert code == 2 and err.startswith(f"kubesched: error: {pc} is invalid (1 problem):\n  steps[0].addPods.template:")
    assert "gold" in err


BIG = """\
steps:
- addNodes: {count: 60, namePrefix: n, zones: [a, b, c], used: 0.2,
             template: {status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}}}}
- addPods: {replicas: 150, name: w, namespace: x,
            template: {metadata: {labels: {app: w}},
                       spec: {containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]}}}
- drain: {selector: {matchLabels: {topology.kubernetes.io/zone: a}}}
"""


def test_the_same_seed_gives_the_same_placements_in_another_process(tmp_path: Path) -> None:
    # Across processes too: nothing depends on the hash seed of str (set or dict orders of names).
    scenario = tmp_path / "s.yaml"
    scenario.write_text(BIG)
    empty = tmp_path / "c.yaml"
    empty.write_text("kind: List\nitems: []\n")
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        argv = ["-m", "kubesched", "simulate", "--cluster", str(empty), "--scenario", str(scenario), "-o", "json"]
        done = subprocess.run([sys.executable, *argv, "--seed", "4"], env=env, capture_output=True, check=True)
        outs.append(done.stdout)
    assert outs[0] == outs[1]
    doc = json.loads(outs[0])
    assert doc["runs"][0]["steps"][1]["aggregate"]["podsPlaced"] == 150


def test_feature_gates_and_release_are_followed(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--cluster", CLUSTER, "--scenario", SCENARIO, "-o", "json", "--kubernetes-version", "1.35"]
    code, out, _ = run(capsys, *argv, "--feature-gates", "OpportunisticBatching=false")
    assert code == 0 and json.loads(out)["kubernetesVersion"] == "v1.35.4"
    code, _, err = run(capsys, *argv, "--feature-gates", "NoSuchGate=true")
    assert code == 2 and "unrecognized feature gate: NoSuchGate" in err
