"""Pieces of the control-plane harness that need no binaries: scheduler configs, node manifests, CLI input checks."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubesched import pki
from kubesched.cli import dev_cluster
from kubesched.errors import CLIError
from kubesched.testing.kubeconfig import read_kubeconfig, write_kubeconfig
from kubesched.testing.nodes import node_manifest, node_status
from kubesched.testing.scheduler import SchedulerConfigError, inject_kubeconfig, load_config, minimal_config


def test_load_config_fills_kind_and_checks_it(tmp_path: Path) -> None:
    assert load_config({"profiles": []})["kind"] == "KubeSchedulerConfiguration"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(minimal_config("mine")))
    assert load_config(path)["profiles"] == [{"schedulerName": "mine"}]
    path.write_text("apiVersion: v1\nkind: Pod\n")
    with pytest.raises(SchedulerConfigError, match="kind 'Pod'"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "message"), [("a: [1\n", r"s\.yaml:2:1: invalid YAML"), ("- x\n", "must be a YAML mapping")]
)
def test_load_config_rejects_bad_yaml(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(SchedulerConfigError, match=message):
        load_config(path)


def test_load_config_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SchedulerConfigError, match="does not exist"):
        load_config(tmp_path / "absent.yaml")


def test_inject_kubeconfig_keeps_explicit_leader_election() -> None:
    client_connection: dict[str, object] = {"qps": 100}
    source = {"leaderElection": {"leaderElect": True}, "clientConnection": client_connection}
    doc = inject_kubeconfig(source, Path("/k"))
    assert doc["clientConnection"] == {"qps": 100, "kubeconfig": "/k"}
    assert doc["leaderElection"]["leaderElect"] is True
    assert "kubeconfig" not in client_connection  # the caller's dict is not modified
    assert inject_kubeconfig({}, Path("/k"))["leaderElection"] == {"leaderElect": False}


def test_node_manifest_and_status() -> None:
    node = node_manifest("n1", labels={"zone": "a"}, taints=[{"key": "k", "effect": "NoSchedule"}], unschedulable=True)
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
    assert node["metadata"]["labels"]["zone"] == "a"
    assert node["spec"] == {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True}
    status = node_status("n1", allocatable={"cpu": "2"})["status"]
    assert status["allocatable"] == {"cpu": "2", "pods": "110"}
    assert status["capacity"] == status["allocatable"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"


def test_kubeconfig_round_trip(tmp_path: Path) -> None:
    ca = pki.new_ca("ca")
    client = pki.client_cert(ca, "u", ["g"])
    path = write_kubeconfig(tmp_path / "k", server="https://127.0.0.1:1", ca_pem=ca.cert_pem, user="u", client=client)
    creds = read_kubeconfig(path)
    assert (creds.server, creds.ca_pem, creds.client) == ("https://127.0.0.1:1", ca.cert_pem, client)
    assert path.stat().st_mode & 0o077 == 0


def _up_args(**overrides: object) -> argparse.Namespace:
    args = {"dev_cluster_command": "up", "nodes": 1, "scheduler_config": None, "no_scheduler": False, "keep": False}
    args.update(overrides)
    return argparse.Namespace(**args)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"nodes": -1}, "--nodes must be 0 or more"),
        ({"scheduler_config": Path("/definitely/absent.yaml")}, "does not exist"),
        ({"no_scheduler": True, "scheduler_config": Path("/x.yaml")}, "contradict"),
    ],
)
def test_dev_cluster_up_rejects_bad_input_before_starting(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(CLIError, match=message):
        dev_cluster.run(_up_args(**overrides))


def test_dev_cluster_up_rejects_invalid_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [\n")
    with pytest.raises(CLIError, match="invalid YAML"):
        dev_cluster.run(_up_args(scheduler_config=bad))


# The harness is no pytest11 entry point: an inner pytest (outside this project's addopts) asks for it.
PLUGIN = "kubesched.testing.pytest_plugin"

INNER_TEST = """
import pytest

@pytest.mark.controlplane
def test_needs_cluster(control_plane):
    pass
"""


def _run_inner_pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a one-test suite that uses the plugin, on a machine without Go (no go on PATH, empty cache)."""
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "KUBESCHED_BIN_DIR")}
    no_go_path = os.pathsep.join(p for p in base.get("PATH", "").split(os.pathsep) if not (Path(p) / "go").exists())
    full_env = {**base, "PATH": no_go_path, "KUBESCHED_CACHE": str(tmp_path / "cache"), **env}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-p",
            PLUGIN,
            str(tmp_path / "test_inner.py"),
        ],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_plugin_skips_without_go(tmp_path: Path) -> None:
    result = _run_inner_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "go toolchain is not on PATH" in result.stdout


def test_plugin_fails_instead_of_skipping_on_ci(tmp_path: Path) -> None:
    result = _run_inner_pytest(tmp_path, CI="true")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout
    assert "CI=true: refusing to skip" in result.stdout
