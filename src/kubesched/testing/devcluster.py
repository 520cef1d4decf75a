"""A running `kubesched dev-cluster up`, seen from other processes: its state file and its control requests.

``up`` writes ``<data dir>/dev-cluster.json`` (what ``-o json`` prints) and a pointer in the runtime directory,
so ``status``, ``down`` and ``restart-scheduler`` find it without flags when only one runs. Requests are JSON files in
``<data dir>/control/``; the ``up`` process handles them one at a time and answers beside them. Files rather than
a socket: nothing listens, and a dead ``up`` leaves nothing that could answer for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubesched.errors import HarnessError

STATE_FILE = "dev-cluster.json"
CONTROL_DIR = "control"


class DevClusterError(HarnessError):
    """No dev-cluster to talk to, or it did not answer."""


def runtime_dir() -> Path:
    """Where running dev-clusters leave a pointer: $XDG_RUNTIME_DIR (else the temp dir)/kubesched-<uid>/dev-clusters."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"kubesched-{os.getuid()}" / "dev-clusters"


def _write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    tmp.replace(path)  # readers never see half a file


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; an exited process its parent has not reaped yet (a zombie) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill()
    return stat.rpartition(")")[2].split()[0] != "Z"


def publish(data_dir: Path, state: dict[str, Any]) -> None:
    """Write the state file and this process's pointer to it."""
    _write_json(data_dir / STATE_FILE, state)
    _write_json(runtime_dir() / f"{os.getpid()}.json", {"dataDir": str(data_dir), "pid": os.getpid()})


def withdraw() -> None:
    """Remove this process's pointer (at exit)."""
    (runtime_dir() / f"{os.getpid()}.json").unlink(missing_ok=True)


def running() -> list[Path]:
    """Data dirs of dev-clusters whose ``up`` process is alive; stale pointers are removed."""
    found = []
    for pointer in sorted(runtime_dir().glob("*.json")):
        try:
            doc = json.loads(pointer.read_text())
            pid, data_dir = int(doc["pid"]), Path(doc["dataDir"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive(pid) and (data_dir / STATE_FILE).is_file():
            found.append(data_dir)
        else:
            pointer.unlink(missing_ok=True)
    return found


def locate(data_dir: Path | None) -> Path:
    """The data dir to talk to: the one given, else $KUBESCHED_DEV_CLUSTER, else the only one running."""
    if data_dir is None and os.environ.get("KUBESCHED_DEV_CLUSTER"):
        data_dir = Path(os.environ["KUBESCHED_DEV_CLUSTER"])
    if data_dir is not None:
        if not (data_dir / STATE_FILE).is_file():
            raise DevClusterError(f"{data_dir} is not the data dir of a dev-cluster (no {STATE_FILE})")
        return data_dir
    found = running()
    if not found:
        raise DevClusterError("no dev-cluster is running (start one with `kubesched dev-cluster up`)")
    if len(found) > 1:
        listed = ", ".join(str(d) for d in found)
        raise DevClusterError(f"{len(found)} dev-clusters are running ({listed}); pick one with --dir")
    return found[0]


def read_state(data_dir: Path) -> dict[str, Any]:
    """The state file, checked to belong to a live ``up`` process."""
    try:
        state: dict[str, Any] = json.loads((data_dir / STATE_FILE).read_text())
    except (OSError, ValueError) as err:
        raise DevClusterError(f"cannot read {data_dir / STATE_FILE}: {err}") from None
    if not isinstance(state, dict) or not isinstance(state.get("pid"), int):
        raise DevClusterError(f"{data_dir / STATE_FILE} is not a dev-cluster state file")
    if not _alive(state["pid"]):
        raise DevClusterError(f"the dev-cluster of {data_dir} is not running (pid {state['pid']} has exited)")
    return state


def stop(data_dir: Path, *, timeout: float) -> dict[str, Any]:
    """Stop the dev-cluster of ``data_dir`` from another process (``dev-cluster down``): SIGTERM to its ``up``
    process, which stops kube-scheduler, kube-apiserver and etcd and removes its pointer (and its data dir, unless it
    was started with ``--keep``); then any component still running (an ``up`` killed without cleaning up) is
    stopped by its recorded pid. Returns the state it had."""
    state = read_state(data_dir)
    pid = state["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            raise DevClusterError(f"the dev-cluster (pid {pid}) did not stop within {timeout:.0f}s")
        time.sleep(0.1)
    for component in _components(state):
        _stop_component(*component)
    return state


def _components(state: dict[str, Any]) -> list[tuple[int, str]]:
    """(pid, binary) of etcd, kube-apiserver and kube-scheduler as the state file recorded them."""
    out = []
    for key in ("scheduler", "apiServer", "etcd"):
        part = state.get(key)
        if isinstance(part, dict) and isinstance(part.get("pid"), int) and isinstance(part.get("binary"), str):
            out.append((part["pid"], part["binary"]))
    return out


def _stop_component(pid: int, binary: str) -> None:
    """SIGTERM, then SIGKILL after 10 s, to ``pid`` if it still runs ``binary`` (a pid reused since is left alone)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except (OSError, UnicodeDecodeError):
        return  # gone (or no /proc: nothing to check it against)
    if argv0 != binary or not _alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def request(data_dir: Path, action: str, payload: dict[str, Any], *, timeout: float) -> dict[str, Any]:
    """Ask the ``up`` process of ``data_dir`` to do ``action``; return its answer (``{"ok": ..., ...}``)."""
    pid = read_state(data_dir)["pid"]
    control = data_dir / CONTROL_DIR
    rid = uuid.uuid4().hex
    req, resp = control / f"{rid}.request.json", control / f"{rid}.response.json"
    _write_json(req, {"action": action, **payload})
    deadline = time.monotonic() + timeout
    try:
        while not resp.is_file():
            if not _alive(pid):
                raise DevClusterError(f"the dev-cluster (pid {pid}) exited before answering")
            if time.monotonic() > deadline:
                raise DevClusterError(f"the dev-cluster (pid {pid}) did not answer within {timeout:.0f}s")
            time.sleep(0.1)
        answer: dict[str, Any] = json.loads(resp.read_text())
        return answer
    finally:
        req.unlink(missing_ok=True)
        resp.unlink(missing_ok=True)


def serve_pending(data_dir: Path, handle: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """Answer every waiting request with ``handle(request)``; return how many. Called by the ``up`` process."""
    count = 0
    for req in _pending(data_dir / CONTROL_DIR):
        try:
            doc = json.loads(req.read_text())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
        except FileNotFoundError:
            continue  # the client gave up
        except (OSError, ValueError) as err:
            answer: dict[str, Any] = {"ok": False, "error": f"unreadable request: {err}"}
        else:
            try:
                answer = handle(doc)
            except Exception as err:  # a bug in one request must not take the cluster down
                answer = {"ok": False, "error": f"internal error: {type(err).__name__}: {err}"}
        _write_json(req.with_name(req.name.replace(".request.", ".response.")), answer)
        req.unlink(missing_ok=True)
        count += 1
    return count


def _pending(control: Path) -> Iterator[Path]:
    def age(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    if control.is_dir():
        yield from sorted(control.glob("*.request.json"), key=age)
