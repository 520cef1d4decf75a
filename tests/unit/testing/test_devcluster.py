"""Finding a running dev-cluster and talking to it through control files: the answers, and what goes wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing import devcluster


@pytest.fixture(autouse=True)
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("KUBESCHED_DEV_CLUSTER", raising=False)
    return tmp_path / "run"


def _state(data_dir: Path, pid: int | None = None) -> dict[str, Any]:
    return {"pid": pid or os.getpid(), "dataDir": str(data_dir), "kubeconfig": str(data_dir / "kc")}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_locate_the_only_one_running_and_drop_stale_pointers(tmp_path: Path) -> None:
    with pytest.raises(devcluster.DevClusterError, match="no dev-cluster is running"):
        devcluster.locate(None)
    live = tmp_path / "live"
    devcluster.publish(live, _state(live))
    stale = devcluster.runtime_dir() / f"{_dead_pid()}.json"
    stale.write_text(json.dumps({"pid": int(stale.stem), "dataDir": str(tmp_path / "gone")}))
    (devcluster.runtime_dir() / "junk.json").write_text("{not json")
    assert devcluster.locate(None) == live
    assert not stale.exists()
    assert devcluster.read_state(live)["kubeconfig"] == str(live / "kc")
    devcluster.withdraw()
    with pytest.raises(devcluster.DevClusterError, match="no dev-cluster is running"):
        devcluster.locate(None)


def test_several_running_need_a_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        a, b = tmp_path / "a", tmp_path / "b"
        devcluster.publish(a, _state(a))
        devcluster._write_json(b / devcluster.STATE_FILE, _state(b, helper.pid))
        devcluster._write_json(devcluster.runtime_dir() / f"{helper.pid}.json", {"pid": helper.pid, "dataDir": str(b)})
        with pytest.raises(devcluster.DevClusterError, match=r"2 dev-clusters are running .*pick one with --dir"):
            devcluster.locate(None)
        assert devcluster.locate(b) == b
        monkeypatch.setenv("KUBESCHED_DEV_CLUSTER", str(a))
        assert devcluster.locate(None) == a
    finally:
        helper.kill()
        helper.wait()
        if helper.stdin is not None:
            helper.stdin.close()
    with pytest.raises(devcluster.DevClusterError, match="is not the data dir of a dev-cluster"):
        devcluster.locate(tmp_path)


def test_state_of_an_exited_cluster_and_bad_state_files(tmp_path: Path) -> None:
    devcluster._write_json(tmp_path / devcluster.STATE_FILE, _state(tmp_path, _dead_pid()))
    with pytest.raises(devcluster.DevClusterError, match=r"is not running \(pid \d+ has exited\)"):
        devcluster.read_state(tmp_path)
    (tmp_path / devcluster.STATE_FILE).write_text("[1, 2]")
    with pytest.raises(devcluster.DevClusterError, match="not a dev-cluster state file"):
        devcluster.read_state(tmp_path)
    (tmp_path / devcluster.STATE_FILE).write_text("{")
    with pytest.raises(devcluster.DevClusterError, match="cannot read"):
        devcluster.read_state(tmp_path)


def test_request_answered_by_the_serving_side(tmp_path: Path) -> None:
    devcluster.publish(tmp_path, _state(tmp_path))
    stop = threading.Event()
    seen: list[dict[str, Any]] = []

    def handle(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"ok": True, "echo": request["config"]}

    def serve() -> None:
        while not stop.wait(0.05):
            devcluster.serve_pending(tmp_path, handle)

    server = threading.Thread(target=serve)
    server.start()
    try:
        answer = devcluster.request(tmp_path, "restart-scheduler", {"config": {"a": 1}}, timeout=10)
    finally:
        stop.set()
        server.join()
    assert answer == {"ok": True, "echo": {"a": 1}}
    assert seen == [{"action": "restart-scheduler", "config": {"a": 1}}]
    assert list((tmp_path / devcluster.CONTROL_DIR).iterdir()) == []  # nothing left behind


def test_garbage_requests_get_an_error_answer(tmp_path: Path) -> None:
    control = tmp_path / devcluster.CONTROL_DIR
    control.mkdir()
    (control / "x.request.json").write_text("{garbage")
    (control / "y.request.json").write_text("[]")
    assert devcluster.serve_pending(tmp_path, lambda r: pytest.fail("handler called")) == 2
    for name in ("x", "y"):
        answer = json.loads((control / f"{name}.response.json").read_text())
        assert answer["ok"] is False and "unreadable request" in answer["error"]


def test_request_to_a_silent_or_dead_cluster(tmp_path: Path) -> None:
    devcluster.publish(tmp_path, _state(tmp_path))
    with pytest.raises(devcluster.DevClusterError, match="did not answer within 0s"):
        devcluster.request(tmp_path, "restart-scheduler", {}, timeout=0.3)
    assert list((tmp_path / devcluster.CONTROL_DIR).iterdir()) == []  # the unanswered request is withdrawn
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    devcluster._write_json(tmp_path / devcluster.STATE_FILE, _state(tmp_path, helper.pid))
    try:
        with pytest.raises(devcluster.DevClusterError, match=r"exited before answering"):
            devcluster.request(tmp_path, "restart-scheduler", {}, timeout=30)
    finally:
        helper.wait()


def test_a_failing_handler_is_an_answer_and_serving_goes_on(tmp_path: Path) -> None:
    control = tmp_path / devcluster.CONTROL_DIR
    control.mkdir()
    (control / "a.request.json").write_text('{"action": "x"}')

    def broken(request: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("clientConnection")

    assert devcluster.serve_pending(tmp_path, broken) == 1
    answer = json.loads((control / "a.response.json").read_text())
    assert answer == {"ok": False, "error": "internal error: KeyError: 'clientConnection'"}
    (control / "b.request.json").write_text('{"action": "y"}')
    assert devcluster.serve_pending(tmp_path, lambda r: {"ok": True}) == 1
