"""The control-plane build lock: a waiter is told who holds it and for how long, and gets the cached result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kubesched.testing import build
from kubesched.testing.waiting import wait_until

HOLDER = """
import sys
from pathlib import Path
from kubesched.testing import build
lock = build._acquire(Path(sys.argv[1]), lambda phase, detail: None)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


def _hold(lock_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _fake_cache(root: Path) -> Path:
    key = build._key_dir(root, build.KUBERNETES_VERSION, build.ETCD_VERSION)
    (key / "bin").mkdir(parents=True, exist_ok=True)
    for name in build.BINARIES:
        (key / "bin" / name).write_text("#!/bin/sh\n")
    versions = {"kubernetes": build.KUBERNETES_VERSION, "etcd": build.ETCD_VERSION}
    (key / "stamp.json").write_text(json.dumps({"versions": versions, "seconds": {}}))
    return key


def test_waiter_hears_who_holds_the_lock_and_gets_the_cached_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBESCHED_CACHE", str(tmp_path))
    monkeypatch.delenv("KUBESCHED_BIN_DIR", raising=False)
    monkeypatch.setattr(build, "go_available", lambda: "no go here: waiting needs none")
    key = build._key_dir(tmp_path, build.KUBERNETES_VERSION, build.ETCD_VERSION)
    key.mkdir(parents=True)
    holder = _hold(key / ".lock")
    heard: list[tuple[str, str]] = []
    result: list[build.Binaries] = []
    waiter = threading.Thread(target=lambda: result.append(build.ensure(progress=lambda p, d: heard.append((p, d)))))
    try:
        waiter.start()
        wait_until(lambda: heard, "progress while waiting for the lock", interval=0.05)
        phase, detail = heard[0]
        assert phase == "waiting for another build of the control plane"
        assert re.search(rf"^lock held by pid {holder.pid} \(python[0-9.]* -c \n", detail), detail
        assert ", for 0s" in detail or ", for 1s" in detail
        assert waiter.is_alive()  # really blocked
        _fake_cache(tmp_path)  # what the holder's build would leave
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    waiter.join(timeout=30)
    assert not waiter.is_alive()
    assert result and result[0].kube_scheduler == key / "bin" / "kube-scheduler"
    note = json.loads((key / ".lock").read_text())
    assert note["pid"] == os.getpid()  # the waiter wrote its own note once it held the lock


def test_holder_note_survives_waiters_and_bad_notes(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    holder = _hold(lock)
    try:
        opened = lock.open("a+")  # what a second waiter does; the old code's "w" emptied the note
        opened.close()
        assert re.match(rf"pid {holder.pid} \(python[0-9.]* -c \n", build.lock_holder(lock))
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    lock.write_text("not json")
    assert build.lock_holder(lock) == "another process (it did not say which)"
    lock.write_text("")
    assert build.lock_holder(lock) == "another process (it did not say which)"


FAKE_GO = """#!{python}
# Stands in for the go tool: what build.py asks of it, in milliseconds instead of minutes.
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
if args[:3] == ["mod", "download", "-json"]:
    gomod = Path("upstream.go.mod")
    staging = "replace (\\n\\tk8s.io/api => ./staging/src/k8s.io/api\\n)\\n"
    gomod.write_text("module k8s.io/kubernetes\\n\\ngo 1.25.0\\n\\n" + staging)
    print(json.dumps({{"GoMod": str(gomod.resolve())}}))
elif args[0] == "build":
    out = Path(args[args.index("-o") + 1])
    out.write_text("#!/bin/sh\\necho " + out.name + " {version}\\n")
    out.chmod(0o755)
elif args[0] != "get":
    sys.exit("fake go: unexpected " + " ".join(args))
"""


def test_cold_build_reports_each_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "gobin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text(FAKE_GO.format(python=sys.executable, version=f"v{build.KUBERNETES_VERSION}"))
    go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KUBESCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KUBESCHED_BIN_DIR", raising=False)
    heard: list[str] = []
    built = build.ensure(progress=lambda phase, detail: heard.append(phase))
    assert built.kube_scheduler.is_file() and build.cached() == built
    etcd, k8s = f"building etcd v{build.ETCD_VERSION} (1/2)", f"building kubernetes v{build.KUBERNETES_VERSION} (2/2)"
    assert heard[:-1] == [
        f"{etcd}, go get (downloads its modules)",
        f"{etcd}, go build",
        f"{k8s}, downloading k8s.io/kubernetes@v{build.KUBERNETES_VERSION}",
        f"{k8s}, go get kube-apiserver (downloads its modules)",
        f"{k8s}, go get kube-scheduler (downloads its modules)",
        f"{k8s}, go build kube-apiserver",
        f"{k8s}, go build kube-scheduler",
    ]
    assert heard[-1].startswith("built in ")
