"""Child processes of the test control plane: own process group, log file, PID file, clean stop.

Every started process is kept in an atexit registry, so an interrupted run (Ctrl-C,
an exception outside any fixture) still stops etcd and kube-apiserver. On Linux the
children also get SIGKILL if this Python process dies without running atexit (SIGKILL,
an unhandled SIGTERM), via PR_SET_PDEATHSIG.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from kubesched.errors import HarnessError
from kubesched.testing import waiting

STOP_GRACE_SECONDS = 10.0
_PR_SET_PDEATHSIG = 1

# The atexit registry: processes started and not yet stopped, in start order.
_LIVE: dict[int, ManagedProcess] = {}


class ProcessError(HarnessError):
    """A control-plane process exited early or did not become ready in time."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the caller retries if it is taken meanwhile)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _pdeathsig_hook() -> Callable[[], None] | None:
    """A preexec function asking Linux to SIGKILL the child when we die, or None where unsupported."""
    # PDEATHSIG fires when the *thread* that forked exits, so only use it from the main thread.
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    prctl = ctypes.CDLL(libc_name, use_errno=True).prctl  # resolved before fork: the child only calls it

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return hook


class ManagedProcess:
    """One long-running program with stdout+stderr appended to ``log_path``."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, *, env: Mapping[str, str] | None = None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The PID of the current run, if any."""
        return self._popen.pid if self._popen else None

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit status once it has exited."""
        return self._popen.poll() if self._popen else None

    def start(self) -> None:
        """Start the program in its own session (so terminal Ctrl-C reaches only us, and we stop it in order)."""
        if self.running:
            raise ProcessError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"--- {time.strftime('%H:%M:%S')} $ {' '.join(self.argv)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=_pdeathsig_hook(),  # resolved before fork; the child only calls prctl
            )
        self.log_path.with_suffix(".pid").write_text(f"{self._popen.pid}\n")
        _LIVE[id(self)] = self

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM the process group, wait up to ``grace`` seconds, then SIGKILL it."""
        popen = self._popen
        _LIVE.pop(id(self), None)
        if popen is None or popen.poll() is not None:
            return
        # Until it is reaped, the group id (== pid, as it leads its own session) cannot be reused.
        os.killpg(popen.pid, signal.SIGTERM)
        try:
            popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()

    def tail(self, lines: int = 40) -> str:
        """The last lines of the log, for error messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def died_error(self) -> ProcessError:
        """The error to raise when the process exited unexpectedly."""
        return ProcessError(
            f"{self.name} exited with status {self.returncode}; last lines of {self.log_path}:\n{self.tail()}"
        )


def wait_until(check: Callable[[], bool], *, what: str, process: ManagedProcess, timeout: float) -> None:
    """Poll ``check`` until it is true; fail early if ``process`` dies, or after ``timeout`` seconds."""

    def alive() -> None:
        if not process.running:
            raise process.died_error()

    try:
        waiting.wait_until(check, what, within=timeout, interval=0.2, alive=alive)
    except waiting.WaitTimeout as err:
        raise ProcessError(f"{err}; last lines of {process.log_path}:\n{process.tail()}") from None


def stop_all() -> None:
    """Stop every process still registered, newest first (the atexit hook)."""
    for proc in reversed(list(_LIVE.values())):
        with contextlib.suppress(OSError):
            proc.stop()


def start_ready(
    make: Callable[[], tuple[ManagedProcess, Callable[[], bool]]], *, what: str, timeout: float, attempts: int = 3
) -> ManagedProcess:
    """Start ``make()``'s process and wait for its ready check.

    ``make`` picks fresh free ports on each call: a port found free can be taken by someone else before the
    program binds it, so a start that dies with "address already in use" is retried on new ports.
    """
    for attempt in range(1, attempts + 1):
        proc, ready = make()
        proc.start()
        try:
            wait_until(ready, what=what, process=proc, timeout=timeout)
        except ProcessError:
            retry = attempt < attempts and not proc.running and "address already in use" in proc.tail()
            proc.stop()
            if retry:
                continue
            raise
        return proc
    raise AssertionError("unreachable")


atexit.register(stop_all)
