"""The API client's per-request lines ("HTTP Request: GET …", as httpx writes them) are off by default and on
from -v 5, in a real run: `extender serve` following the real kube-apiserver (its lists and watches)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import wait_until

pytestmark = pytest.mark.controlplane


def _start(cp: ControlPlane, log: Path, *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "kubesched", "extender", "serve", "--policy", "custom-label"]
    cmd += ["--kubeconfig", str(cp.admin_kubeconfig), "--listen", f"127.0.0.1:{port}", "--log-format", "text", *flags]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_request_lines_only_from_v5(control_plane: ControlPlane, tmp_path: Path) -> None:
    quiet_log, loud_log = tmp_path / "v0.log", tmp_path / "v5.log"
    quiet, quiet_url = _start(control_plane, quiet_log)
    loud, loud_url = _start(control_plane, loud_log, "-v", "5")
    try:
        wait_until(lambda: _ready(quiet_url) and _ready(loud_url), "both extenders ready", within=60)
        # The loud one shows its watch requests; the quiet one, started first, has had as long to make its own.
        wait_until(
            lambda: "HTTP Request: GET" in loud_log.read_text() and "watch" in loud_log.read_text(),
            "-v 5 lines",
            within=60,
        )
        assert "serving policy" in quiet_log.read_text()  # it does log, at -v 0
        assert "HTTP Request" not in quiet_log.read_text()
        assert "httpcore" not in quiet_log.read_text()
    finally:
        for proc in (quiet, loud):
            proc.terminate()
            assert proc.wait(15) == 0
    assert "Traceback" not in quiet_log.read_text() + loud_log.read_text()
