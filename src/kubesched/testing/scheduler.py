"""kube-scheduler runs against the test control plane: config loading/injection and a stoppable handle."""

from __future__ import annotations

import copy
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesched.errors import ConfigurationError
from kubesched.testing.process import ManagedProcess, free_port, start_ready, wait_until

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


class SchedulerConfigError(ConfigurationError):
    """A KubeSchedulerConfiguration that cannot be used (missing file, bad YAML, wrong kind)."""


def minimal_config(scheduler_name: str = "default-scheduler") -> dict[str, Any]:
    """One profile with the default plugins, no leader election."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name}],
    }


def load_config(source: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    """A KubeSchedulerConfiguration from a dict or a YAML file, checked for apiVersion and kind."""
    if isinstance(source, Mapping):
        doc: Any = copy.deepcopy(dict(source))
        origin = "the scheduler config"
    else:
        path = Path(source)
        origin = str(path)
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise SchedulerConfigError(f"scheduler config {path} does not exist") from None
        except OSError as err:
            raise SchedulerConfigError(f"cannot read scheduler config {path}: {err.strerror}") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
            raise SchedulerConfigError(f"{where}: invalid YAML: {getattr(err, 'problem', None) or err}") from None
    if not isinstance(doc, dict):
        raise SchedulerConfigError(f"{origin} must be a YAML mapping (a KubeSchedulerConfiguration)")
    doc.setdefault("apiVersion", API_VERSION)
    doc.setdefault("kind", KIND)
    if doc["apiVersion"] != API_VERSION or doc["kind"] != KIND:
        raise SchedulerConfigError(
            f"{origin} has apiVersion {doc['apiVersion']!r} and kind {doc['kind']!r}; "
            f"expected apiVersion {API_VERSION!r} and kind {KIND!r}"
        )
    return doc


def inject_kubeconfig(config: Mapping[str, Any], kubeconfig: Path) -> dict[str, Any]:
    """A copy with ``clientConnection.kubeconfig`` set and leader election off unless the config says otherwise.

    The kubeconfig must go into the file: kube-scheduler ignores ``--kubeconfig`` when ``--config`` is given.
    Leader election defaults to off because a restarted or second scheduler would otherwise wait for the
    previous holder's lease (15 s) before scheduling anything.
    """
    doc = copy.deepcopy(dict(config))
    doc.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
    doc.setdefault("leaderElection", {}).setdefault("leaderElect", False)
    return doc


def check_with_binary(binary: Path, config_path: Path, *, origin: str | None = None, timeout: float = 60.0) -> None:
    """Let kube-scheduler itself validate a config file (``--write-config-to``: it builds every profile, then exits
    without contacting the apiserver); raise SchedulerConfigError with its reason."""
    with tempfile.TemporaryDirectory(prefix="kubesched-check-") as tmp:
        argv = [str(binary), f"--config={config_path}", f"--write-config-to={Path(tmp) / 'out.yaml'}"]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SchedulerConfigError(f"kube-scheduler took over {timeout:.0f}s to check {config_path}") from None
    if out.returncode != 0:
        found = re.findall(r'"command failed" err="(.*)"', out.stderr)
        reason = found[-1].replace('\\"', '"') if found else out.stderr.strip()[-2000:]
        raise SchedulerConfigError(f"kube-scheduler refuses {origin or config_path}: {reason}")


class KubeScheduler:
    """One kube-scheduler process with its own config file; may be stopped and started again."""

    def __init__(self, name: str, binary: Path, config_path: Path, log_path: Path, *, start_timeout: float = 60.0):
        self.name = name
        self.binary = binary
        self.config_path = config_path
        self.log_path = log_path
        self.start_timeout = start_timeout
        self.port: int | None = None
        self._process: ManagedProcess | None = None

    @property
    def running(self) -> bool:
        """Whether the process is up."""
        return self._process is not None and self._process.running

    @property
    def pid(self) -> int | None:
        """The PID of the current run."""
        return self._process.pid if self._process else None

    @property
    def url(self) -> str:
        """The https base URL of its health/metrics endpoints (self-signed certificate)."""
        if self.port is None:
            raise RuntimeError(f"scheduler {self.name} was never started")
        return f"https://127.0.0.1:{self.port}"

    def _probe(self, port: int, path: str, ok: Callable[[int], bool]) -> Callable[[], bool]:
        def check() -> bool:
            try:
                # Its serving certificate is self-signed per run; nothing secret travels here.
                return ok(
                    httpx.get(f"https://127.0.0.1:{port}{path}", verify=False, timeout=2.0, trust_env=False).status_code
                )
            except httpx.TransportError:
                return False

        return check

    def start(self) -> KubeScheduler:
        """Start on a fresh port and wait for /healthz (then /readyz: informers synced); no-op if running."""
        if self.running:
            return self

        def make() -> tuple[ManagedProcess, Callable[[], bool]]:
            port = free_port()
            argv = [
                str(self.binary),
                f"--config={self.config_path}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            ]
            self.port = port
            return ManagedProcess(self.name, argv, self.log_path), self._probe(port, "/healthz", lambda s: s == 200)

        self._process = start_ready(make, what=f"{self.name} /healthz", timeout=self.start_timeout)
        assert self.port is not None
        # /readyz adds the scheduler's own handler-sync check; 404 would mean an older binary without it.
        ready = self._probe(self.port, "/readyz", lambda s: s in (200, 404))
        try:
            wait_until(ready, what=f"{self.name} /readyz", process=self._process, timeout=self.start_timeout)
        except Exception:
            self._process.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        if self._process is not None:
            self._process.stop()

    def restart(self) -> KubeScheduler:
        """Stop and start again (same config file, new port)."""
        self.stop()
        return self.start()

    def tail(self, lines: int = 40) -> str:
        """The last lines of its log."""
        return self._process.tail(lines) if self._process else "(never started)"
