"""`kubesched explain`: the command on a cluster file, its outputs and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "examples" / "cluster.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["explain", *argv])
    except SystemExit as end:  # argparse's own errors
        code = int(end.code or 0)
    got = capsys.readouterr()
    return code, got.out, got.err


def test_text_reads_like_kubectl_describe_with_what_would_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ml/huge-0", "--cluster", str(CLUSTER))
    assert code == 0
    assert out.startswith("Pod:                 ml/huge-0\n")
    assert "Node:                <none>" in out and "Message:             0/4 nodes are available:" in out
    assert "node-d  no    NodeUnschedulable: node(s) were unschedulable      NodeResourcesFit" in out
    assert "What would help:\n  1. fits on 2 more node(s) without its cpu request (asks 32 cpu;" in out


def test_json_is_the_documented_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "shop/web-0", "--cluster", str(CLUSTER), "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["apiVersion"] == "kubesched.io/v1alpha1" and doc["kind"] == "Explanation"
    assert doc["pod"] == "shop/web-0" and doc["kubernetesVersion"] == "v1.37.2" and doc["node"]
    assert {n["name"] for n in doc["nodes"]} == {"node-a", "node-b", "node-c", "node-d"}
    chosen = next(n for n in doc["nodes"] if n["name"] == doc["node"])
    assert chosen["feasible"] and chosen["total"] == sum(s["weighted"] for s in chosen["scores"])


def test_the_release_is_followed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "shop/web-0", "--cluster", str(CLUSTER), "-o", "json", "--kubernetes-version", "1.35")
    doc = json.loads(out)
    assert code == 0 and doc["kubernetesVersion"] == "v1.35.4"
    assert "NodeDeclaredFeatures" not in {s["plugin"] for s in doc["preFilter"]}  # a v1.37 default plugin


def test_a_missing_pod_names_what_is_there(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "shop/nope", "--cluster", str(CLUSTER))
    assert code == 2 and out == ""
    assert err.startswith(
        "kubesched: error: no pod shop/nope in the cluster (8 pods); pending pods: ml/huge-0, ml/trainer-0"
    )
    assert "Traceback" not in err


def test_bad_inputs_are_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "a/b", "--cluster", str(tmp_path / "none.yaml"))
    assert code == 2 and "none.yaml" in err and "Traceback" not in err
    bad = tmp_path / "config.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n")
    code, _, err = run(capsys, "shop/web-0", "--cluster", str(CLUSTER), "--config", str(bad))
    assert code == 2 and "profiles" in err and "Traceback" not in err
    deep = tmp_path / "deep.yaml"
    deep.write_text("items: " + "[" * 5000 + "]" * 5000 + "\n")
    code, _, err = run(capsys, "shop/web-0", "--cluster", str(deep))
    assert code == 2 and "Traceback" not in err


def test_without_cluster_or_kubeconfig_the_loading_rule_says_what_to_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As kubectl: $KUBECONFIG, else in-cluster, else ~/.kube/config; here none of them exists.
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run(capsys, "shop/web-0")
    assert code == 2 and "no cluster to talk to: give --kubeconfig FILE, set KUBECONFIG=FILE" in err
    assert err.rstrip().endswith("(or --cluster FILE)") and "Traceback" not in err


def test_without_a_source_the_live_cluster_is_read_as_kubectl_finds_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent.kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, out, err = run(capsys, "shop/web-0")
    assert code == 2 and out == "" and "absent.kubeconfig" in err and "Traceback" not in err


def test_kubectls_namespace_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "huge-0", "-n", "ml", "--cluster", str(CLUSTER), "-o", "json")
    assert code == 0 and json.loads(out)["pod"] == "ml/huge-0"
    code, _, err = run(capsys, "shop/web-0", "-n", "ml", "--cluster", str(CLUSTER))
    assert code == 2 and "names namespace shop, but --namespace says ml" in err


def test_the_kubectl_plugin_runs_this_kubesched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess

    assert main(["kubectl-plugin", "--dir", str(tmp_path)]) == 0
    shim = tmp_path / "kubectl-kubesched"
    assert shim.stat().st_mode & 0o111
    # kubectl runs `kubectl kubesched ARGS` as `kubectl-kubesched ARGS`.
    done = subprocess.run(
        [str(shim), "explain", "huge-0", "-n", "ml", "--cluster", str(CLUSTER), "-o", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pod"] == "ml/huge-0"
    assert main(["kubectl-plugin", "--dir", str(tmp_path)]) == 0  # ours: replaced
    other = tmp_path / "other"
    other.mkdir()
    (other / "kubectl-kubesched").write_text("#!/bin/sh\necho someone else's\n")
    assert main(["kubectl-plugin", "--dir", str(other)]) == 2
    assert "was not written by kubesched (--force replaces it)" in capsys.readouterr().err
