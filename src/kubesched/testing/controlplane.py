"""A real etcd + kube-apiserver (+ kube-scheduler) on 127.0.0.1 for tests, as plain child processes.

See docs/control-plane.md. Typical use::

    with ControlPlane() as cp:
        cp.create_node("node-0")
        sched = cp.start_scheduler()
        ...
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from kubesched import pki
from kubesched.config.yamlout import dump_yaml
from kubesched.testing import build
from kubesched.testing.adminapi import AdminAPI
from kubesched.testing.kubeconfig import ssl_context, write_kubeconfig
from kubesched.testing.process import ManagedProcess, ProcessError, free_port, start_ready, wait_until
from kubesched.testing.scheduler import (
    KubeScheduler,
    check_with_binary,
    inject_kubeconfig,
    load_config,
    minimal_config,
)

SERVING_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
SERVING_IPS = ("127.0.0.1", "::1", "10.0.0.1")
ADMIN = ("kubesched-admin", ("system:masters",))
TOKEN_ADMIN = "kubesched-token-admin"  # the user of ControlPlane.admin_token
# The identity real clusters give kube-scheduler; the apiserver's bootstrap RBAC already grants it what it needs.
SCHEDULER_IDENTITY = "system:kube-scheduler"


def keep_logs_requested() -> bool:
    """Whether $KUBESCHED_KEEP_LOGS asks to keep the working directory."""
    return os.environ.get("KUBESCHED_KEEP_LOGS", "").lower() in ("1", "true", "yes")


class ControlPlane(AdminAPI):
    """etcd + kube-apiserver on free loopback ports, with a throwaway PKI and per-identity kubeconfigs."""

    def __init__(
        self,
        binaries: build.Binaries | None = None,
        *,
        workdir: Path | None = None,
        keep_logs: bool | None = None,
        apiserver_flags: Mapping[str, str] | None = None,
        start_timeout: float = 120.0,
        static_tokens: Mapping[str, tuple[str, Sequence[str]]] | None = None,
    ):
        found = binaries or build.cached()
        if found is None:
            raise build.BuildError(
                "control-plane binaries are not built; run scripts/build-control-plane or `kubesched dev-cluster build`"
            )
        self.binaries = found
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="kubesched-cp-"))
        self.keep_logs = keep_logs_requested() if keep_logs is None else keep_logs
        self.apiserver_flags = dict(apiserver_flags or {})
        self.start_timeout = start_timeout
        # Static bearer tokens (--token-auth-file, read at start): token -> (user, groups). ``admin_token``
        # is always there (group system:masters), for tests of token and exec-plugin authentication.
        self.admin_token = secrets.token_hex(16)
        self.static_tokens = {self.admin_token: (TOKEN_ADMIN, ("system:masters",)), **(static_tokens or {})}
        self.port: int | None = None
        self.etcd_port: int | None = None
        self._etcd: ManagedProcess | None = None
        self._apiserver: ManagedProcess | None = None
        self._client: httpx.Client | None = None
        self._schedulers: list[KubeScheduler] = []
        self._kubeconfigs: dict[tuple[str, tuple[str, ...]], Path] = {}
        self._stopped = False
        self._pki_dir = self.workdir / "pki"
        self.logs_dir = self.workdir / "logs"
        self._make_pki()

    # --- PKI and kubeconfigs -------------------------------------------------------------------------------

    def _make_pki(self) -> None:
        d = self._pki_dir
        self.serving_ca = pki.new_ca("kubesched-serving-ca")
        self.client_ca = pki.new_ca("kubesched-client-ca")
        serving = pki.serving_cert(self.serving_ca, "kube-apiserver", dns_names=SERVING_DNS, ip_addresses=SERVING_IPS)
        self.ca_file, _ = self.serving_ca.write(d / "serving-ca.crt", d / "serving-ca.key")
        self.client_ca.write(d / "client-ca.crt", d / "client-ca.key")
        serving.write(d / "apiserver.crt", d / "apiserver.key")
        sa_private, sa_public = pki.key_pair()
        pki.write_private(d / "sa.key", sa_private)
        (d / "sa.pub").write_bytes(sa_public)
        with (d / "tokens.csv").open("w") as out:
            for i, (token, (user, groups)) in enumerate(self.static_tokens.items()):
                out.write(f'{token},{user},uid-{i},"{",".join(groups)}"\n')
        admin = pki.client_cert(self.client_ca, ADMIN[0], ADMIN[1])
        admin.write(d / "admin.crt", d / "admin.key")  # for curl --cert/--key while debugging
        self._admin_tls = ssl_context(self.serving_ca.cert_pem, admin)

    @property
    def url(self) -> str:
        """The apiserver's https URL."""
        if self.port is None:
            raise RuntimeError("the control plane is not started")
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        """etcd's client URL (plain http on loopback)."""
        if self.etcd_port is None:
            raise RuntimeError("the control plane is not started")
        return f"http://127.0.0.1:{self.etcd_port}"

    def kubeconfig(self, identity_cn: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig whose client certificate says user ``identity_cn`` in ``groups`` (made once per pair)."""
        key = (identity_cn, tuple(groups))
        if key not in self._kubeconfigs:
            cert = pki.client_cert(self.client_ca, identity_cn, groups)
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in identity_cn)
            path = self.workdir / "kubeconfigs" / f"{safe}.kubeconfig"
            if path.exists():  # same user, other groups
                path = path.with_name(f"{safe}-{len(self._kubeconfigs)}.kubeconfig")
            write_kubeconfig(path, server=self.url, ca_pem=self.serving_ca.cert_pem, user=identity_cn, client=cert)
            self._kubeconfigs[key] = path
        return self._kubeconfigs[key]

    @property
    def admin_kubeconfig(self) -> Path:
        """A kubeconfig in group system:masters (RBAC is bypassed)."""
        return self.kubeconfig(ADMIN[0], ADMIN[1])

    # --- lifecycle ---------------------------------------------------------------------------------------

    def _start_etcd(self) -> None:
        def make() -> tuple[ManagedProcess, Callable[[], bool]]:
            client, peer = free_port(), free_port()
            c, p = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
            argv = [
                str(self.binaries.etcd),
                "--name=kubesched",
                f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={c}",
                f"--advertise-client-urls={c}",
                f"--listen-peer-urls={p}",
                f"--initial-advertise-peer-urls={p}",
                f"--initial-cluster=kubesched={p}",
                "--unsafe-no-fsync=true",  # throwaway data: durability only costs time
                "--auto-compaction-retention=1",
                f"--quota-backend-bytes={2 * 1024**3}",
                "--log-level=warn",
            ]
            self.etcd_port = client

            def healthy() -> bool:
                try:
                    r = httpx.get(f"{c}/health", timeout=2.0, trust_env=False)
                    return r.status_code == 200 and r.json().get("health") == "true"
                except (httpx.TransportError, ValueError):
                    return False

            return ManagedProcess("etcd", argv, self.logs_dir / "etcd.log"), healthy

        self._etcd = start_ready(make, what="etcd /health", timeout=self.start_timeout)

    def _apiserver_argv(self, port: int) -> list[str]:
        d = self._pki_dir
        flags = {
            "etcd-servers": self.etcd_url,
            "bind-address": "127.0.0.1",
            # Without it a loopback bind looks for a default-route interface, which sandboxes may lack.
            "advertise-address": "127.0.0.1",
            "secure-port": str(port),
            "cert-dir": str(d),
            "tls-cert-file": str(d / "apiserver.crt"),
            "tls-private-key-file": str(d / "apiserver.key"),
            "client-ca-file": str(d / "client-ca.crt"),
            "token-auth-file": str(d / "tokens.csv"),
            "service-account-issuer": f"https://127.0.0.1:{port}",
            "service-account-key-file": str(d / "sa.pub"),
            "service-account-signing-key-file": str(d / "sa.key"),
            "service-cluster-ip-range": "10.0.0.0/24",
            "authorization-mode": "RBAC",
            # No kube-controller-manager: nobody would create the default ServiceAccount or lift not-ready taints.
            "disable-admission-plugins": "ServiceAccount,TaintNodesByCondition",
            "endpoint-reconciler-type": "none",
            "allow-privileged": "true",
            "enable-priority-and-fairness": "false",
            "max-requests-inflight": "0",
            "max-mutating-requests-inflight": "0",
        }
        flags.update(self.apiserver_flags)
        return [str(self.binaries.kube_apiserver), *(f"--{k}={v}" for k, v in flags.items())]

    def _start_apiserver(self, same_port: bool = False) -> None:
        def make() -> tuple[ManagedProcess, Callable[[], bool]]:
            port = self.port if same_port and self.port is not None else free_port()
            self.port = port

            def ready() -> bool:
                # As admin: anonymous /readyz is denied until the RBAC bootstrap roles exist.
                try:
                    url = f"https://127.0.0.1:{port}/readyz"
                    return httpx.get(url, verify=self._admin_tls, timeout=3.0, trust_env=False).status_code == 200
                except httpx.TransportError:
                    return False

            proc = ManagedProcess("kube-apiserver", self._apiserver_argv(port), self.logs_dir / "kube-apiserver.log")
            return proc, ready

        self._apiserver = start_ready(make, what="kube-apiserver /readyz", timeout=self.start_timeout)
        if self._client is not None:
            self._client.close()
        self._client = httpx.Client(base_url=self.url, verify=self._admin_tls, timeout=30.0, trust_env=False)

        def default_namespace() -> bool:
            return self.get_or_none("/api/v1/namespaces/default") is not None

        # /readyz does not wait for the system-namespaces controller; tests often start in "default".
        wait_until(default_namespace, what="namespace default", process=self._apiserver, timeout=self.start_timeout)

    def start(self) -> ControlPlane:
        """Start etcd, then kube-apiserver; return when the apiserver is ready. A ControlPlane runs once."""
        if self._stopped:
            raise RuntimeError("this ControlPlane was stopped; create a new one")
        if self._apiserver is not None:
            return self
        try:
            self._start_etcd()
            self._start_apiserver()
        except BaseException:
            self.keep_logs = True
            self.stop()
            raise
        self.admin_kubeconfig  # noqa: B018 - written now so the path exists as soon as start() returns
        return self

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM) and start it again on the same port and PKI; return when ready.

        Clients see their connections closed, then refused, then the same server again (etcd keeps the data).
        """
        if self._apiserver is None:
            raise RuntimeError("the control plane is not started")
        self._apiserver.stop()
        self._start_apiserver(same_port=True)

    def stop(self) -> None:
        """Stop schedulers, apiserver, etcd (newest first); remove the working directory unless keeping logs."""
        if self._stopped:
            return
        self._stopped = True
        for sched in reversed(self._schedulers):
            sched.stop()
        for proc in (self._apiserver, self._etcd):
            if proc is not None:
                proc.stop()
        if self._client is not None:
            self._client.close()
            self._client = None
        if not self.workdir.exists():
            return
        if self.keep_logs:
            print(f"kubesched: control-plane logs kept in {self.logs_dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None and not issubclass(exc_type, KeyboardInterrupt):
            self.keep_logs = True
        self.stop()

    def processes(self) -> list[ManagedProcess]:
        """etcd and kube-apiserver, for health checks by long-running callers."""
        return [p for p in (self._etcd, self._apiserver) if p is not None]

    # --- HTTP client -----------------------------------------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        """The admin httpx client (base URL = the apiserver)."""
        if self._client is None:
            raise RuntimeError("the control plane is not started")
        return self._client

    def start_scheduler(
        self,
        config: Mapping[str, Any] | str | Path | None = None,
        *,
        name: str | None = None,
        identity: str = SCHEDULER_IDENTITY,
        groups: Sequence[str] = (),
    ) -> KubeScheduler:
        """Run kube-scheduler with ``config`` (default: one profile ``default-scheduler``); return its handle.

        ``clientConnection.kubeconfig`` is injected, pointing at a kubeconfig for ``identity``.
        """
        name = name or f"kube-scheduler-{len(self._schedulers) + 1}"
        if any(s.name == name for s in self._schedulers):
            raise ValueError(f"a scheduler named {name!r} exists already; stop and restart() it instead")
        source = config if config is not None else minimal_config()
        doc = inject_kubeconfig(load_config(source), self.kubeconfig(identity, groups))
        config_path = self.workdir / "schedulers" / f"{name}.yaml"
        config_path.parent.mkdir(parents=True, exist_ok=True)
        config_path.write_text(dump_yaml(doc))  # quoted where kube-scheduler's YAML would see numbers
        sched = KubeScheduler(name, self.binaries.kube_scheduler, config_path, self.logs_dir / f"{name}.log")
        self._schedulers.append(sched)
        return sched.start()

    def reconfigure_scheduler(
        self, name: str, config: Mapping[str, Any] | str | Path, *, origin: str | None = None
    ) -> KubeScheduler:
        """Run scheduler ``name`` with another config (starting it if there is none), etcd and apiserver untouched.

        kube-scheduler checks the new config first (SchedulerConfigError: the running one is left alone). If the
        new one is accepted but does not come up, the previous config is started again and ProcessError raised.
        """
        existing = next((s for s in self._schedulers if s.name == name), None)
        if existing is None:
            return self.start_scheduler(config, name=name)
        previous = existing.config_path.read_text()
        # The same identity as before: its kubeconfig is in the running config.
        kubeconfig = Path(load_config(existing.config_path)["clientConnection"]["kubeconfig"])
        doc = inject_kubeconfig(load_config(config), kubeconfig)
        candidate = existing.config_path.with_suffix(".next.yaml")
        candidate.write_text(dump_yaml(doc))
        check_with_binary(
            existing.binary, candidate, origin=origin or (None if isinstance(config, Mapping) else str(config))
        )
        existing.stop()
        candidate.replace(existing.config_path)
        try:
            return existing.start()
        except ProcessError as err:
            existing.config_path.write_text(previous)
            existing.start()
            raise ProcessError(f"the new config did not come up; back on the previous one: {err}") from None

    @property
    def schedulers(self) -> list[KubeScheduler]:
        """Every scheduler started so far (running or stopped)."""
        return list(self._schedulers)

    def wait_pod_bound(self, namespace: str, name: str, *, timeout: float = 60.0) -> str:
        """Poll until the pod has spec.nodeName; return it. On timeout the error shows events and scheduler logs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            node: str | None = self.api("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")["spec"].get("nodeName")
            if node:
                return node
            time.sleep(0.2)
        events = self.api(
            "GET", f"/api/v1/namespaces/{namespace}/events", params={"fieldSelector": f"involvedObject.name={name}"}
        )
        lines = [f"{e.get('reason')}: {e.get('message')}" for e in events.get("items", [])]
        logs = "\n".join(f"--- {s.name} ---\n{s.tail(20)}" for s in self._schedulers if s.running)
        raise TimeoutError(
            f"pod {namespace}/{name} not bound after {timeout:.0f}s; events:\n" + "\n".join(lines) + f"\n{logs}"
        )


__all__ = ["ControlPlane", "KubeScheduler", "ProcessError"]
