"""A small asyncio client for the Kubernetes API: kubeconfig or in-cluster config, raw JSON in and out.

Responses are returned as bytes or decoded into the partial structs of `kubesched.api.core`; nothing
deserializes whole objects it does not read.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import yaml

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


class KubeClient:
    """Async requests to one API server."""

    def __init__(self, conn: Connection, timeout: float = 30.0) -> None:
        headers = {"Accept": "application/json", "User-Agent": "kubesched"}
        if conn.token:
            headers["Authorization"] = f"Bearer {conn.token}"
        self.conn = conn
        self._http = httpx.AsyncClient(base_url=conn.server, verify=conn.ssl_context, headers=headers, timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    @staticmethod
    def _raise(resp: httpx.Response) -> None:
        if resp.is_success:
            return
        try:
            st = msgspec.json.decode(resp.content, type=_Status)
            raise APIError(resp.status_code, st.message or resp.text, st.reason)
        except msgspec.DecodeError:
            raise APIError(resp.status_code, resp.text) from None

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> bytes:
        content = None if body is None else (body if isinstance(body, bytes) else msgspec.json.encode(body))
        headers = {"Content-Type": content_type} if content is not None else None
        resp = await self._http.request(method, path, content=content, params=params, headers=headers)
        self._raise(resp)
        return resp.content

    async def stream_lines(
        self, path: str, params: Mapping[str, str], read_timeout: float | None = None
    ) -> AsyncIterator[bytes]:
        """GET a watch stream and yield one JSON event per line (``read_timeout``: longest silence)."""
        timeout = httpx.Timeout(30.0, read=read_timeout)
        async with self._http.stream("GET", path, params=params, timeout=timeout) as resp:
            if not resp.is_success:
                await resp.aread()
                self._raise(resp)
            buffer = b""
            async for chunk in resp.aiter_bytes():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield line
            if buffer.strip():
                yield buffer
