"""A small asyncio client for the Kubernetes API: kubeconfig or in-cluster config, raw JSON in and out.

Responses are returned as bytes or decoded into the partial structs of `kubesched.api.core`; nothing
deserializes whole objects it does not read.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import ssl
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import msgspec
import yaml

from kubesched.cluster.http1 import AnswerLost, Fenced, Pool, TransportError

__all__ = ["APIError", "AnswerLost", "Connection", "Fenced", "KubeClient", "KubeConfigError", "TransportError"]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeConfigError(ValueError):
    """A kubeconfig that cannot be used; the message names the file and field."""


class APIError(Exception):
    """A non-2xx answer of the API server."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def assigned_node(self) -> str | None:
        """For a refused Binding: the node the pod is already bound to (409 '… is already assigned to node "X"')."""
        found = _ALREADY_ASSIGNED.search(self.message) if self.status == 409 else None
        return found.group(1) if found is not None else None


# kube-apiserver's message for a Binding of a pod that has a node (pkg/registry/core/pod/storage).
_ALREADY_ASSIGNED = re.compile(r'is already assigned to node "([^"]+)"')


class _Status(msgspec.Struct):
    message: str = ""
    reason: str = ""
    code: int = 0


@dataclass(frozen=True)
class Connection:
    """Where the API server is and how to authenticate."""

    server: str
    ssl_context: ssl.SSLContext | bool
    token: str | None = None
    source: str = ""


def _data_or_file(entry: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        return base64.b64decode(data)
    path = entry.get(key)
    if path:
        p = Path(path)
        return (p if p.is_absolute() else base / p).read_bytes()
    return None


def _ssl_context(ca: bytes | None, cert: bytes | None, key: bytes | None, insecure: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ca:
        ctx.load_verify_locations(cadata=ca.decode())
    if cert and key:
        # ssl loads client certificates only from files: write them to a private temp dir, then delete.
        with tempfile.TemporaryDirectory() as tmp:
            cf, kf = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            cf.write_bytes(cert)
            kf.write_bytes(key)
            os.chmod(kf, 0o600)
            ctx.load_cert_chain(cf, kf)
    return ctx


def from_kubeconfig(path: Path, context: str | None = None) -> Connection:
    """Read a kubeconfig file (current context unless ``context`` is given)."""
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as err:
        raise KubeConfigError(f"{path}: cannot read: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise KubeConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(doc, dict):
        raise KubeConfigError(f"{path}: not a kubeconfig")

    def named(section: str, name: str) -> dict[str, Any]:
        for item in doc.get(section) or []:
            if item.get("name") == name:
                return dict(item.get(section[:-1]) or {})
        raise KubeConfigError(f"{path}: {section}: no entry named {name!r}")

    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise KubeConfigError(f"{path}: current-context is not set")
    ctx = named("contexts", ctx_name)
    cluster = named("clusters", ctx.get("cluster", ""))
    user = named("users", ctx["user"]) if ctx.get("user") else {}
    server = cluster.get("server")
    if not server:
        raise KubeConfigError(f"{path}: clusters[{ctx.get('cluster')}].server is not set")
    base = path.parent
    try:
        ca = _data_or_file(cluster, "certificate-authority", base)
        cert = _data_or_file(user, "client-certificate", base)
        key = _data_or_file(user, "client-key", base)
    except OSError as err:
        raise KubeConfigError(f"{path}: {err.filename}: {err.strerror}") from None
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    try:
        context_ssl = _ssl_context(ca, cert, key, bool(cluster.get("insecure-skip-tls-verify")))
    except ssl.SSLError as err:
        raise KubeConfigError(f"{path}: unusable certificate or key: {err}") from None
    return Connection(server.rstrip("/"), context_ssl, token, str(path))


def in_cluster() -> Connection:
    """The pod's service account (KUBERNETES_SERVICE_HOST/PORT and the mounted token and CA)."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeConfigError("not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set")
    token = (SERVICE_ACCOUNT_DIR / "token").read_text().strip()
    ca = (SERVICE_ACCOUNT_DIR / "ca.crt").read_bytes()
    host = f"[{host}]" if ":" in host else host
    return Connection(f"https://{host}:{port}", _ssl_context(ca, None, None, False), token, "in-cluster")


def connect(kubeconfig: str | None) -> Connection:
    """A kubeconfig path, else $KUBECONFIG, else the in-cluster service account."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if path:
        return from_kubeconfig(Path(path))
    return in_cluster()


def raise_for_status(status: int, body: bytes) -> None:
    """The one mapping of a non-2xx answer to APIError (message and reason of the Status, else the body)."""
    if 200 <= status < 300:
        return
    try:
        st = msgspec.json.decode(body, type=_Status)
    except msgspec.DecodeError:
        raise APIError(status, body.decode(errors="replace")) from None
    raise APIError(status, st.message or body.decode(errors="replace"), st.reason)


class KubeClient:
    """Async requests to one API server: the one client of the project (scheduler, extender, elector, events).

    Requests go over the pool of `http1.py` (timeouts, checked keep-alive, never a blind resend; see
    there); watch streams over httpx, one long-lived connection each, with connect and read timeouts.
    Errors: APIError (the server answered non-2xx), TransportError (not reached, nothing applied),
    AnswerLost (sent, answer lost: maybe applied), Fenced (not sent: its gate was closed). The last
    three are OSErrors.
    """

    def __init__(
        self,
        conn: Connection,
        timeout: float = 15.0,
        *,
        connections: int = 16,
        connect_timeout: float = 5.0,
        idle_timeout: float = 15.0,
        user_agent: str = "kubesched",
    ) -> None:
        headers = {"Accept": "application/json", "User-Agent": user_agent}
        if conn.token:
            headers["Authorization"] = f"Bearer {conn.token}"
        self.conn = conn
        self.connect_timeout = connect_timeout
        self.pool = Pool(
            conn.server,
            conn.ssl_context,
            headers,
            connections,
            connect_timeout=connect_timeout,
            timeout=timeout,
            idle_timeout=idle_timeout,
        )
        self._http = httpx.AsyncClient(
            base_url=conn.server,
            verify=conn.ssl_context,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(keepalive_expiry=idle_timeout),
            trust_env=False,
        )

    async def aclose(self, grace: float = 2.0) -> None:
        """Close every connection; bounded by ``grace`` seconds whatever the network does."""
        await self.pool.aclose()
        try:
            async with asyncio.timeout(grace):
                await self._http.aclose()
        except TimeoutError:
            pass

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        *,
        time_limit: float | None = None,
        gate: Callable[[], bool] | None = None,
    ) -> bytes:
        """The body of a 2xx answer; APIError otherwise (see the class for transport errors)."""
        content = None if body is None else (body if isinstance(body, bytes) else msgspec.json.encode(body))
        if params:
            path = f"{path}?{urlencode(params)}"
        status, data = await self.pool.request(method, path, content, content_type, time_limit=time_limit, gate=gate)
        raise_for_status(status, data)
        return data

    async def stream_lines(
        self, path: str, params: Mapping[str, str], read_timeout: float | None = None
    ) -> AsyncIterator[bytes]:
        """GET a watch stream and yield one JSON event per line (``read_timeout``: longest silence)."""
        timeout = httpx.Timeout(read_timeout, connect=self.connect_timeout)
        try:
            async with self._http.stream("GET", path, params=params, timeout=timeout) as resp:
                if not resp.is_success:
                    await resp.aread()
                    raise_for_status(resp.status_code, resp.content)
                buffer = b""
                async for chunk in resp.aiter_bytes():
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield line
                if buffer.strip():
                    yield buffer
        except httpx.TimeoutException as err:
            raise TransportError(f"watch {path}: silent for {read_timeout}s ({type(err).__name__})") from None
        except httpx.HTTPError as err:
            raise TransportError(f"watch {path}: {type(err).__name__}: {err}") from None
