"""dev-cluster's command line before anything starts, and the up process's answers to malformed requests."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import dev_cluster
from kubesched.cli.main import main


class _Plane:
    schedulers: list[Any] = []


@pytest.mark.parametrize(
    "request_doc",
    [
        {"action": "rm -rf"},
        {"action": "restart-scheduler", "config": "/etc/passwd"},
        {"action": "restart-scheduler", "config": [1, 2]},
        {"action": "restart-scheduler", "config": None, "configSource": 7},
    ],
)
def test_malformed_requests_are_answered_not_obeyed(request_doc: dict[str, Any]) -> None:
    args = argparse.Namespace(scheduler_config=None)
    cluster = dev_cluster._Cluster(_Plane(), args, out=None)  # type: ignore[arg-type]
    answer = cluster.handle(request_doc)
    assert answer["ok"] is False and answer["error"]


def test_bad_nodes_input_fails_before_any_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dev_cluster, "_binaries", lambda: pytest.fail("must not build or start"))
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("- name: node-0\n- name: gpu\n  capacity: {gpu: 1}\n")
    assert main(["dev-cluster", "up", "--nodes-file", str(nodes)]) == 2
    assert "[1].capacity.gpu: unknown resource 'gpu'" in capsys.readouterr().err
    nodes.write_text("- name: node-0\n")
    assert main(["dev-cluster", "up", "--nodes", "2", "--nodes-file", str(nodes)]) == 2
    assert "defines node-0, which --nodes 2 creates too" in capsys.readouterr().err
    assert main(["dev-cluster", "up", "--nodes-file", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_status_and_restart_without_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("KUBESCHED_DEV_CLUSTER", raising=False)
    assert main(["dev-cluster", "status"]) == 2
    assert "no dev-cluster is running" in capsys.readouterr().err
    assert main(["dev-cluster", "down"]) == 2
    assert "no dev-cluster is running (start one with `kubesched dev-cluster up`)" in capsys.readouterr().err
    assert main(["dev-cluster", "down", "--dir", str(tmp_path)]) == 2
    assert "is not the data dir of a dev-cluster" in capsys.readouterr().err
    assert main(["dev-cluster", "restart-scheduler", "--dir", str(tmp_path)]) == 2
    assert "is not the data dir of a dev-cluster" in capsys.readouterr().err
