"""Misspelt plugin names get the closest known one, in the scheduler config and profile validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.cli.main import main
from kubesched.framework.registry import did_you_mean
from kubesched.plugins import in_tree

ROOT = Path(__file__).resolve().parents[3]


def test_did_you_mean_prefers_the_same_name_in_another_case_then_the_closest() -> None:
    known = ["NodeResourcesFit", "NodeAffinity", "TaintToleration"]
    assert did_you_mean("NodeResourcesFitt", known) == "; did you mean 'NodeResourcesFit'?"
    assert did_you_mean("noderesourcesfit", known) == "; did you mean 'NodeResourcesFit'?"
    assert did_you_mean("Zebra", known) == ""
    assert in_tree().unknown("TaintTolerations") == "unknown plugin 'TaintTolerations'; did you mean 'TaintToleration'?"


def test_scheduler_config_with_a_misspelt_plugin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "examples" / "scheduler-config.yaml").read_text()
    assert "- name: NodeResourcesFit\n" in text
    bad = tmp_path / "sched.yaml"
    bad.write_text(text.replace("- name: NodeResourcesFit\n", "- name: NodeResourcesFitt\n"))
    code = main(["scheduler", "run", "--cluster", str(ROOT / "examples" / "cluster.yaml"), "--config", str(bad)])
    err = capsys.readouterr().err
    assert code == 2
    assert 'plugin "NodeResourcesFitt" does not exist; did you mean "NodeResourcesFit"?' in err
    assert "Traceback" not in err
