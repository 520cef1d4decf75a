"""docs/simulate.md's sweep is examples/sweep.yaml, and the table shown is what the command prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "simulate.md").read_text().split("## Sweeps", 1)[1]


def test_the_sections_sweep_is_the_example_file() -> None:
    shown = re.search(r"```yaml\n# examples/sweep.yaml\n(.*?)```\n", SECTION, re.S)
    example = (ROOT / "examples" / "sweep.yaml").read_text()
    assert shown is not None and example.endswith(shown.group(1))


def test_the_sections_table_is_the_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = re.search(r"```\n(Sweep bin-packing: .*?)```\n", SECTION, re.S)
    assert shown is not None
    monkeypatch.chdir(ROOT)
    assert main(["simulate", "--sweep", "examples/sweep.yaml", "--workers", "1"]) == 0
    assert capsys.readouterr().out == shown.group(1)
