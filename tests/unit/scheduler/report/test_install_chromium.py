"""scripts/install-chromium: a no-op when the browser is there; a clear error when it cannot install it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.scheduler.report import browser

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "install-chromium"


def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, str(SCRIPT)], capture_output=True, text=True, env=env, check=False, timeout=60)


def test_an_installed_browser_is_left_alone(tmp_path: Path) -> None:
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho should not run\n")
    fake.chmod(0o755)
    done = run({"PATH": "/nonexistent", "KUBESCHED_CHROMIUM": str(fake)})
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_no_package_manager_is_a_clear_error(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("id",):  # what the script needs besides bash's builtins; no apt-get, no sudo
        found = shutil.which(tool)
        assert found is not None
        os.symlink(found, bin_dir / tool)
    done = run({"PATH": str(bin_dir), "KUBESCHED_CHROMIUM": str(tmp_path / "missing")})
    assert done.returncode == 1
    assert "is missing" in done.stderr and ("apt-get" in done.stderr or "sudo" in done.stderr)


def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "missing")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="refusing to skip"):
        browser.chromium_or_skip()
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="install-chromium"):
        browser.chromium_or_skip()
