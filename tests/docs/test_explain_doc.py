"""docs/explain.md's example is what `kubesched explain` prints for it, character for character."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_pages_example_output_is_the_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (ROOT / "docs" / "explain.md").read_text()
    shown = re.search(r"```\n(Pod: .*?)```\n", page, re.S)
    assert shown is not None
    monkeypatch.chdir(ROOT)
    assert main(["explain", "ml/huge-0", "--cluster", "examples/cluster.yaml"]) == 0
    assert capsys.readouterr().out == shown.group(1)
