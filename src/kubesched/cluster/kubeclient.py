"""A small asyncio client for the Kubernetes API: kubeconfig or in-cluster config, raw JSON in and out.

Where and who (kubeconfig files, contexts, in-cluster) is `kubeconfig.py`; the per-request credential
(tokens, exec plugins, certificate reloads) is `credentials.py`.

Responses are returned as bytes or decoded into the partial structs of `kubesched.api.core`; nothing
deserializes whole objects it does not read.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import msgspec

from kubesched.cluster.credentials import CredentialError, Credentials
from kubesched.cluster.http1 import AnswerLost, Fenced, Pool
from kubesched.cluster.kubeconfig import Connection, KubeConfigError, connect, from_kubeconfig, in_cluster
from kubesched.errors import ClusterError, TransportError

__all__ = [
    "APIError",
    "AnswerLost",
    "Connection",
    "CredentialError",
    "Fenced",
    "KubeClient",
    "KubeConfigError",
    "TransportError",
    "connect",
    "from_kubeconfig",
    "in_cluster",
]


class APIError(ClusterError):
    """A non-2xx answer of the API server: the one class for it, whoever asked (this client, the reflector, the
    test harness's admin calls). ``request`` (``"POST /api/v1/nodes"``) and ``body`` (the decoded answer, a
    Status object as a dict, or its text) are given by callers that keep them (`testing.adminapi`).

    Not `ClusterAPIError` (`kubesched.plugin`): that is what a `ClusterAPI` call raises to plugins and the
    scheduler, from the API server or the in-memory cluster alike."""

    def __init__(self, status: int, message: str, reason: str = "", *, request: str = "", body: Any = None) -> None:
        answer = f"{status} {reason}: {message}" if reason else f"{status}: {message}"
        super().__init__(f"{request} -> {answer}" if request else answer)
        self.status = status
        self.reason = reason
        self.message = message
        self.request = request
        self.body = body

    @property
    def assigned_node(self) -> str | None:
        """For a refused Binding: the node the pod is already bound to (409 '… is already assigned to node "X"')."""
        found = _ALREADY_ASSIGNED.search(self.message) if self.status == 409 else None
        return found.group(1) if found is not None else None


# kube-apiserver's message for a Binding of a pod that has a node (pkg/registry/core/pod/storage).
_ALREADY_ASSIGNED = re.compile(r'is already assigned to node "([^"]+)"')


class _UserInfo(msgspec.Struct):
    username: str = ""


class _ReviewStatus(msgspec.Struct):
    userInfo: _UserInfo = msgspec.field(default_factory=_UserInfo)


class _Review(msgspec.Struct):
    status: _ReviewStatus = msgspec.field(default_factory=_ReviewStatus)


class _Status(msgspec.Struct):
    message: str = ""
    reason: str = ""
    code: int = 0


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
    there); so do watch streams, one connection of their own each, with connect and read timeouts.
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
        self.conn = conn
        self.credentials = conn.credentials or Credentials()
        self.connect_timeout = connect_timeout
        https = conn.server.startswith("https:")
        tls = self.credentials.ssl_context if conn.credentials is not None and https else None
        self.pool = Pool(
            conn.server,
            conn.ssl_context,
            headers,
            connections,
            connect_timeout=connect_timeout,
            timeout=timeout,
            idle_timeout=idle_timeout,
            auth=self.credentials,
            tls=tls,
            server_name=conn.tls_server_name,
            proxy=conn.proxy,
        )

    async def aclose(self) -> None:
        """Abort every connection, requests' and watches': bounded whatever the network does."""
        await self.pool.aclose()

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
    ) -> AsyncGenerator[bytes, None]:
        """GET a watch stream and yield one JSON event per line (``read_timeout``: longest silence)."""
        buffer = b""
        stream = self.pool.stream(f"{path}?{urlencode(params)}", read_timeout, raise_for_status)
        async with contextlib.aclosing(stream) as chunks:
            async for chunk in chunks:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield line
        if buffer.strip():
            yield buffer

    async def authenticate(self) -> str | None:
        """Who the API server says we are (a SelfSubjectReview); None when it cannot be reached now.

        Raises CredentialError when no credential can be obtained (a failing exec plugin) or the server
        refuses it (401): a command checks this at startup and stops with the message, rather than
        serving and retrying its watches forever.
        """
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            data = await self.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)
        except APIError as err:
            if err.status == 401:
                raise CredentialError(
                    f"authentication failed: {self.conn.source or self.conn.server}: the API server refused"
                    f" the credentials of user {self.credentials.user!r} ({err.message})"
                ) from None
            return f"(unknown: {err})"  # e.g. a server without the API: authenticated all the same
        except TransportError:
            return None
        try:
            return msgspec.json.decode(data, type=_Review).status.userInfo.username
        except msgspec.DecodeError:
            return "(unknown)"
