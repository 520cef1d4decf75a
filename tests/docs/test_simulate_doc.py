"""docs/simulate.md's example is examples/scenario.yaml, and its output is what `kubesched simulate` prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "simulate.md").read_text()


def test_the_pages_scenario_is_the_example_file() -> None:
    shown = re.search(r"```yaml\n(.*?)```\n", PAGE, re.S)
    assert shown is not None and shown.group(1) == (ROOT / "examples" / "scenario.yaml").read_text()


def test_the_pages_output_is_the_commands(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    shown = re.search(r"```\n(Simulation: .*?)```\n", PAGE, re.S)
    assert shown is not None
    monkeypatch.chdir(ROOT)
    assert main(["simulate", "--cluster", "examples/cluster.yaml", "--scenario", "examples/scenario.yaml"]) == 0
    assert capsys.readouterr().out == shown.group(1)


def test_the_pages_error_is_the_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    big = tmp_path / "big.yaml"
    big.write_text(
        "steps:\n- replayPending: true\n"
        "- addNodes: {count: 1, namePrefix: n, template: {status: {allocatable: {cpu: 1}}}}\n"
        "- addPods: {replicas: 5000000, name: w, template: {spec: {containers: [{name: c}]}}}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "--cluster", str(ROOT / "examples" / "cluster.yaml"), "--scenario", "big.yaml"]) == 2
    shown = re.search(r"```\n(kubesched: error: big\.yaml .*?)```\n", PAGE, re.S)
    assert shown is not None and capsys.readouterr().err == shown.group(1)
