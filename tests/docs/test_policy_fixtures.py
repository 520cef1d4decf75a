"""The policy authors' fixtures (kubesched.scheduler.explain.pytest_plugin): docs/plugins.md's worked example
passes as shipped, a changed decision fails with a diff, and --kubesched-update-goldens writes the file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ["-p", "kubesched.scheduler.explain.pytest_plugin"]


def pytest_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGIN, str(directory), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False, cwd=directory)


def copy_examples(tmp_path: Path) -> Path:
    root = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", root)
    return root / "tests"


def test_the_worked_example_passes(tmp_path: Path) -> None:
    done = pytest_in(copy_examples(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_a_changed_decision_fails_with_a_diff_and_updating_rewrites_the_golden(tmp_path: Path) -> None:
    tests = copy_examples(tmp_path)
    golden = tests / "golden" / "huge-0.json"
    golden.write_text(golden.read_text().replace("4 Insufficient nvidia.com/gpu", "4 Insufficient nvidia.com/tpu"))
    failed = pytest_in(tests, "-k", "golden")
    assert failed.returncode == 1
    assert "the explanation of ml/huge-0 differs from" in failed.stdout
    assert '-  "message": "0/4 nodes are available: 4 Insufficient nvidia.com/tpu.' in failed.stdout
    assert '+  "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.' in failed.stdout
    updated = pytest_in(tests, "-k", "golden", "--kubesched-update-goldens")
    assert updated.returncode == 0 and golden.read_text() == (ROOT / "examples/tests/golden/huge-0.json").read_text()
    golden.unlink()
    missing = pytest_in(tests, "-k", "golden")
    assert missing.returncode == 1 and "no golden file" in missing.stdout
