"""rich tables at a terminal only: pipes and files get the plain text they always had."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.cli import tables
from kubesched.cli.main import main

CLUSTER = Path(__file__).resolve().parents[3] / "examples" / "cluster.yaml"


def test_plain_text_when_stdout_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["NAME", "EXTENSION", "POINTS", "SOURCE"]
    assert "─" not in out and "\x1b[" not in out


def test_a_table_at_a_terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(tables, "is_tty", lambda stream: True)
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["plugins", "list"]) == 0
    out = capsys.readouterr().out
    assert "│" in out and "NodeResourcesFit" in out and "EXTENSION POINTS" in out
    assert main(["scheduler", "run", "--cluster", str(CLUSTER)]) == 0
    out = capsys.readouterr().out
    assert "│" in out and "POD" in out
    assert "jobs/batch-0" in out and "preempted: Preempted by pod" in out
    assert out.rstrip().endswith("5/7 pending pod(s) scheduled")


def test_progress_is_silent_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with tables.progress("starting"):
        pass
    assert capsys.readouterr() == ("", "")
