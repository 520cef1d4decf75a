"""dev-cluster progress without a terminal: a line per phase, a "still" line per interval, never a flood."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from kubesched.cli.dev_cluster_progress import Progress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_per_phase_and_interval() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress("dc:", stream=out, every=30.0, clock=clock)
    assert not progress.live  # a StringIO is no terminal: no spinner, no escape codes
    progress("waiting for another build", "lock held by pid 7 (x), for 5s")
    for _ in range(60):  # the lock wait reports twice a second: no line for each
        clock.now += 0.5
        progress("waiting for another build", "lock held by pid 7 (x), for 30s")
        progress.tick()
    clock.now += 5
    progress("building etcd (1/2)", "go get")
    clock.now += 61
    progress.tick()
    lines = out.getvalue().splitlines()
    assert lines == [
        "dc: waiting for another build: lock held by pid 7 (x), for 5s (0s)",
        "dc: still waiting for another build: lock held by pid 7 (x), for 30s (30s)",
        "dc: building etcd (1/2): go get (0s)",
        "dc: still building etcd (1/2): go get (1m01s)",
    ]
    assert "\x1b" not in out.getvalue()


def test_context_manager_without_terminal_stops_its_ticker() -> None:
    out = io.StringIO()
    with Progress("dc:", stream=out) as progress:
        progress("phase", "")
    assert out.getvalue() == "dc: phase (0s)\n"
    assert progress._ticker is not None and not progress._ticker.is_alive()


def test_duration() -> None:
    assert [duration(s) for s in (0, 59.9, 60, 185)] == ["0s", "59s", "1m00s", "3m05s"]


HOLDER = """
import json, sys
from pathlib import Path
from kubesched.testing import build
key = build._key_dir(build.cache_root(), build.KUBERNETES_VERSION, build.ETCD_VERSION)
key.mkdir(parents=True, exist_ok=True)
lock = build._acquire(key / ".lock", lambda phase, detail: None)
print("held", flush=True)
sys.stdin.readline()
(key / "bin").mkdir()
for name in build.BINARIES:
    (key / "bin" / name).write_text("#!/bin/sh\\necho " + name + " v" + build.KUBERNETES_VERSION + "\\n")
    (key / "bin" / name).chmod(0o755)
versions = {"kubernetes": build.KUBERNETES_VERSION, "etcd": build.ETCD_VERSION}
(key / "stamp.json").write_text(json.dumps({"versions": versions, "seconds": {"etcd": 1.0}}))
"""


def test_dev_cluster_build_says_whose_build_it_waits_for(tmp_path: Path) -> None:
    env = {**os.environ, "KUBESCHED_CACHE": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("KUBESCHED_BIN_DIR", None)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    waiter = subprocess.Popen(
        [sys.executable, "-m", "kubesched", "dev-cluster", "build"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert waiter.stderr is not None
    try:
        lines = [waiter.stderr.readline(), waiter.stderr.readline()]
        assert "not built yet" in lines[0]
        assert re.match(
            rf"kubesched dev-cluster: waiting for another build of the control plane: "
            rf"lock held by pid {holder.pid} \(python[0-9.]* -c \n",
            lines[1],
        ), lines
    finally:
        holder.stdin.write("go\n")
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert "kube-scheduler v" in out  # the holder's result, without building anything here
