"""Credentials for the API client: a bearer token (static, from a file, or from an exec plugin) and TLS.

Why not a library: lightkube 1.0.1 (its auth is an ``httpx.Auth`` of the ``httpx2`` fork it depends on;
its exec plugin ignores ``expirationTimestamp``, sets no ``KUBERNETES_EXEC_INFO``, rejects
``client.authentication.k8s.io/v1`` and client certificates) and kubernetes-asyncio 36.1.0 (pulls
aiohttp, urllib3, six and dateutil; its ExecProvider says itself it lacks TLS certificates and
caching) both miss what client-go does (the full comparison: docs/auth.md, "Why our own loader"). This
module does client-go's rules (``exec.go``,
``cachingTokenSource``) and nothing more:

* exec plugins (``client.authentication.k8s.io/v1`` and ``v1beta1``): command, args, env,
  ``KUBERNETES_EXEC_INFO`` (with the cluster when ``provideClusterInfo``), ``interactiveMode`` (we have
  no terminal: ``Always`` is an error), the credential cached until its ``expirationTimestamp`` and
  re-obtained on expiry or after a 401; a token or a client certificate and key;
* a token file (``tokenFile``, the in-cluster service-account token) re-read every minute and after a 401;
* client certificate files reloaded when their modification time changes (checked per new connection).

``header()`` is the per-request fast path: the cached ``Authorization`` value, or None when it must
be (re)obtained with ``await refresh()``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubesched.errors import ClusterError

log = logging.getLogger("kubesched.credentials")

TOKEN_FILE_PERIOD = 60.0  # client-go re-reads a token file once a minute
PLUGIN_TIMEOUT = 60.0
EXEC_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


class CredentialError(ClusterError, OSError):
    """No credential could be obtained (a failing exec plugin, an unreadable token file); the message says why."""


@dataclass(frozen=True)
class ExecConfig:
    """A kubeconfig user's ``exec`` section."""

    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    interactive_mode: str = "IfAvailable"
    provide_cluster_info: bool = False
    install_hint: str = ""
    cluster_info: Mapping[str, Any] = field(default_factory=dict)  # the ExecCredential's spec.cluster


@dataclass(frozen=True)
class TLS:
    """How to build the TLS context: CA, verification, and a client certificate (inline or files)."""

    ca: bytes | None = None
    insecure: bool = False
    cert_data: bytes | None = None
    key_data: bytes | None = None
    cert_file: Path | None = None
    key_file: Path | None = None


def ssl_context(tls: TLS, cert: bytes | None = None, key: bytes | None = None) -> ssl.SSLContext:
    """An SSLContext for ``tls``; ``cert``/``key`` (PEM) override its client certificate."""
    ctx = ssl.create_default_context()
    if tls.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif tls.ca:
        ctx.load_verify_locations(cadata=tls.ca.decode())
    if cert is None and tls.cert_file and tls.key_file:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
        return ctx
    cert, key = (cert, key) if cert is not None else (tls.cert_data, tls.key_data)
    if cert and key:
        # ssl loads client certificates only from files: write them to a private temp dir, then delete.
        with tempfile.TemporaryDirectory() as tmp:
            cf, kf = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            cf.write_bytes(cert)
            kf.touch(0o600)
            kf.write_bytes(key)
            ctx.load_cert_chain(cf, kf)
    return ctx


def _mtimes(tls: TLS) -> tuple[int, ...]:
    try:
        return tuple(os.stat(p).st_mtime_ns for p in (tls.cert_file, tls.key_file) if p is not None)
    except OSError:
        return ()


def _expiry(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class Credentials:
    """The Authorization header and TLS context of one kubeconfig user (see the module docstring)."""

    def __init__(
        self,
        user: str = "",
        *,
        tls: TLS | None = None,
        token: str | None = None,
        token_file: Path | None = None,
        exec_config: ExecConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.user = user
        self.tls = tls or TLS()
        self.token_file = token_file
        self.exec = exec_config
        self.clock = clock
        self._static = f"Bearer {token}" if token and not token_file and not exec_config else None
        self._value: str | None = None  # the cached header value (token file, exec)
        self._valid_until = 0.0  # wall-clock seconds; +inf: until a 401
        self._lock = asyncio.Lock()
        self._exec_cert: tuple[bytes, bytes] | None = None
        self._ssl: ssl.SSLContext | None = None
        self._ssl_key: tuple[object, ...] = ()
        self.refreshes = 0  # credentials obtained so far (tests read it)

    @property
    def dynamic(self) -> bool:
        return self.token_file is not None or self.exec is not None

    def header(self) -> str | None:
        """The Authorization value ("" for none), or None when ``refresh()`` must obtain it first."""
        if not self.dynamic:
            return self._static or ""
        if self._value is not None and self.clock() < self._valid_until:
            return self._value
        if self.exec is None:
            return self._read_token_file()  # a small file: read in place, no await needed
        return None

    async def current(self) -> str:
        """The Authorization value for a request now ("" for none), obtained first when it must be."""
        value = self.header()
        return await self.refresh() if value is None else value

    async def replacing(self, rejected: str) -> str | None:
        """After a 401 refused ``rejected``: the credential obtained again, or None when there is no other
        (a static one, or the same again). Both transports ask this; only idempotent requests are resent."""
        if not self.dynamic:
            return None
        fresh = await self.refresh(rejected=rejected)
        return None if fresh == rejected else fresh

    async def refresh(self, rejected: str | None = None) -> str:
        """Obtain the credential again (``rejected``: the value a 401 refused; skipped if it changed since)."""
        if not self.dynamic:
            return self._static or ""
        async with self._lock:
            if rejected is not None and self._value is not None and self._value != rejected:
                return self._value  # another request already replaced the refused credential
            if rejected is None and (current := self.header()) is not None:
                return current
            if self.exec is None:
                self._valid_until = 0.0
                return self._read_token_file()
            return await self._run_exec()

    def _read_token_file(self) -> str:
        assert self.token_file is not None
        try:
            token = self.token_file.read_text().strip()
        except OSError as err:
            if self._value is None:
                raise CredentialError(f"user {self.user!r}: token file {self.token_file}: {err.strerror}") from None
            log.warning("token file %s: %s; keeping the token read before", self.token_file, err.strerror)
            token = ""
        if token:
            if self._value is not None and self._value != f"Bearer {token}":
                log.info("token file %s: a new token", self.token_file)
            self._value = f"Bearer {token}"
            self.refreshes += 1
        self._valid_until = self.clock() + TOKEN_FILE_PERIOD
        if self._value is None:
            raise CredentialError(f"user {self.user!r}: token file {self.token_file} is empty")
        return self._value

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context for a new connection: rebuilt when the certificate files or the plugin's one change."""
        key = (self._exec_cert, _mtimes(self.tls))
        if self._ssl is None or key != self._ssl_key:
            cert, pkey = self._exec_cert or (None, None)
            try:
                self._ssl = ssl_context(self.tls, cert, pkey)
            except (OSError, ssl.SSLError) as err:
                if self._ssl is None:
                    raise CredentialError(f"user {self.user!r}: unusable client certificate or key: {err}") from None
                log.warning("user %r: client certificate not reloaded (%s); keeping the one before", self.user, err)
            self._ssl_key = key
        return self._ssl

    # --- exec plugins -----------------------------------------------------------------------------------

    def _what(self) -> str:
        assert self.exec is not None
        return f"user {self.user!r}: exec plugin {self.exec.command!r}"

    def exec_info(self) -> str:
        """KUBERNETES_EXEC_INFO as client-go sets it (we never have a terminal: interactive is false)."""
        assert self.exec is not None
        spec: dict[str, Any] = {"interactive": False}
        if self.exec.provide_cluster_info:
            spec["cluster"] = dict(self.exec.cluster_info)
        return json.dumps({"kind": "ExecCredential", "apiVersion": self.exec.api_version, "spec": spec})

    async def _run_exec(self) -> str:
        ex = self.exec
        assert ex is not None
        if ex.interactive_mode == "Always":
            raise CredentialError(f"{self._what()} needs a terminal (interactiveMode: Always), and there is none")
        env = {**os.environ, **dict(ex.env), "KUBERNETES_EXEC_INFO": self.exec_info()}
        try:
            proc = await asyncio.create_subprocess_exec(
                ex.command,
                *ex.args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as err:
            hint = f" ({ex.install_hint.strip()})" if ex.install_hint.strip() else ""
            raise CredentialError(f"{self._what()} cannot be run: {err.strerror}{hint}") from None
        try:
            async with asyncio.timeout(PLUGIN_TIMEOUT):
                out, err_out = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise CredentialError(f"{self._what()} gave no credential in {PLUGIN_TIMEOUT:.0f}s") from None
        if proc.returncode != 0:
            detail = err_out.decode(errors="replace").strip()[-500:]
            raise CredentialError(f"{self._what()} failed: exit status {proc.returncode}: {detail or '(no output)'}")
        self._accept(self._parse(out))
        self.refreshes += 1
        assert self._value is not None
        return self._value

    def _parse(self, out: bytes) -> dict[str, Any]:
        assert self.exec is not None
        try:
            doc = json.loads(out)
        except json.JSONDecodeError as err:  # where it breaks, never what it holds (the token)
            where = f"{err.msg} at line {err.lineno}, column {err.colno}"
            raise CredentialError(f"{self._what()}: output is not an ExecCredential (JSON: {where})") from None
        except ValueError:
            raise CredentialError(f"{self._what()}: output is not an ExecCredential (not UTF-8 JSON)") from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise CredentialError(f"{self._what()}: output is not an ExecCredential")
        if doc.get("apiVersion") != self.exec.api_version:
            raise CredentialError(
                f"{self._what()}: apiVersion {doc.get('apiVersion')!r} does not match {self.exec.api_version!r}"
            )
        status = doc.get("status")
        if not isinstance(status, dict):
            raise CredentialError(f"{self._what()}: the ExecCredential has no status")
        return status

    def _accept(self, status: Mapping[str, Any]) -> None:
        token, cert, key = status.get("token"), status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise CredentialError(f"{self._what()}: status has only one of clientCertificateData and clientKeyData")
        if not token and not cert:
            raise CredentialError(f"{self._what()}: status has neither a token nor a client certificate")
        until = float("inf")
        if stamp := status.get("expirationTimestamp"):
            try:
                until = _expiry(str(stamp))
            except ValueError:
                raise CredentialError(f"{self._what()}: expirationTimestamp {stamp!r} is not RFC 3339") from None
        self._exec_cert = (str(cert).encode(), str(key).encode()) if cert else None
        if cert:
            self.ssl_context()  # fail now, not at the next connection, on a broken certificate
        self._value = f"Bearer {token}" if token else ""
        self._valid_until = until


def exec_config(section: Mapping[str, Any], cluster_info: Mapping[str, Any], where: str) -> ExecConfig:
    """A kubeconfig ``users[].user.exec`` section, checked as client-go does (``where`` names it in errors)."""
    command, version = section.get("command"), section.get("apiVersion")
    if not command or not isinstance(command, str):
        raise ValueError(f"{where}.command is not set")
    if version not in EXEC_VERSIONS:
        raise ValueError(f"{where}.apiVersion: {version!r} is not one of {', '.join(EXEC_VERSIONS)}")
    mode = section.get("interactiveMode") or ("" if version.endswith("/v1") else "IfAvailable")
    if not mode:
        raise ValueError(f"{where}.interactiveMode must be set for {version}")
    if mode not in ("Never", "IfAvailable", "Always"):
        raise ValueError(f"{where}.interactiveMode: {mode!r} must be Never, IfAvailable or Always")
    args: Sequence[Any] = section.get("args") or []
    env: Sequence[Any] = section.get("env") or []
    if not isinstance(args, list) or not isinstance(env, list):
        raise ValueError(f"{where}: args and env must be lists")
    pairs = []
    for i, item in enumerate(env):
        if not isinstance(item, dict) or "name" not in item:
            raise ValueError(f"{where}.env[{i}]: needs name and value")
        pairs.append((str(item["name"]), str(item.get("value", ""))))
    return ExecConfig(
        command=command,
        api_version=version,
        args=tuple(str(a) for a in args),
        env=tuple(pairs),
        interactive_mode=mode,
        provide_cluster_info=bool(section.get("provideClusterInfo")),
        install_hint=str(section.get("installHint") or ""),
        cluster_info=cluster_info,
    )


def b64(data: bytes | None) -> str:
    return base64.b64encode(data).decode() if data else ""
