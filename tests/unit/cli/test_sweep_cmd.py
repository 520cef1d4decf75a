"""`kubesched simulate --sweep`: the table on the example, and every misuse one clear error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
SWEEP = str(ROOT / "examples" / "sweep.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["simulate", *argv])
    except SystemExit as end:
        code = int(end.code or 0)
    got = capsys.readouterr()
    return code, got.out, got.err


def test_the_example_sweep_in_one_process(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    code, out, err = run(capsys, "--sweep", SWEEP, "--workers", "1", "--report", str(report))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Sweep bin-packing: 12 configuration(s) × 1 scenario(s) = 12 cells on 1 process;")
    assert lines[1].split()[:6] == ["rank", "config", "settings", "objective", "podsPlaced", "nodesUsed"]
    assert lines[2].split()[0] == "1" and len(lines) == 2 + 12
    assert '<table id="ranking">' in report.read_text()
    code, out, _ = run(capsys, "--sweep", SWEEP, "--workers", "1", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["kind"] == "SweepResult" and len(doc["cells"]) == 12
    objectives = [c["objective"] for c in doc["configurations"]]
    assert objectives == sorted(objectives, reverse=True)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--dask", "tcp://x:1", "--cluster", "a", "--scenario", "b"], "--dask and --workers need --sweep FILE"),
        ([], "--cluster FILE and --scenario FILE are required (or --sweep FILE)"),
        (["--sweep", SWEEP, "--scenario", "x"], "--sweep FILE names its scenarios and configurations"),
        (["--sweep", SWEEP, "--cluster", "x"], "--sweep FILE names its cluster file (field cluster)"),
        (["--sweep", SWEEP, "--workers", "-1"], "--workers: must be from 0 to 1024"),
        (["--sweep", SWEEP, "--seed", "3"], "--sweep FILE names its seed (field seed)"),
        (["--sweep", SWEEP, "--workers", "2", "--dask", "tcp://x:1"], "--workers is for local processes"),
        (["--sweep", "/nonexistent/sweep.yaml"], "/nonexistent/sweep.yaml: cannot read"),
    ],
)
def test_misuse_is_one_clear_error(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and expected in err and "Traceback" not in err


def test_a_hostile_sweep_names_each_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubesched.io/v1alpha1",
                "kind": "Sweep",
                "cluster": "../nowhere.yaml",
                "scenarios": ["x.yaml"],
                "axes": {"weights": {"NodeResourcesFit": [1, 1000]}},
                "objective": {"maximize": "joy"},
            }
        )
    )
    code, _, err = run(capsys, "--sweep", str(path))
    assert code == 2
    assert f"{path} is invalid (4 problems):" in err
    for field in (
        "cluster: no such file",
        "scenarios[0]: no such file",
        "axes.weights.NodeResourcesFit[1]: must be",
        "objective.maximize: unknown metric 'joy'",
    ):
        assert f"  {field}" in err, err


def test_a_configuration_kube_scheduler_refuses_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = yaml.safe_load(Path(SWEEP).read_text())
    doc["cluster"], doc["scenarios"] = (
        str(ROOT / "examples" / "cluster.yaml"),
        [str(ROOT / "examples" / "scenario.yaml")],
    )
    doc["axes"] = {"percentageOfNodesToScore": [10], "weights": {"NodeResourcesFitt": [1]}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, _, err = run(capsys, "--sweep", str(path))
    assert code == 2
    assert "configuration c0 (NodeResourcesFitt=1 percentageOfNodesToScore=10): config.profiles[0].plugins.score" in err
