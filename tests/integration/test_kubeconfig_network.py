"""kubeconfig's network settings against the real kube-apiserver: `tls-server-name` (the name the serving
certificate is checked against) and `proxy-url` (an HTTP CONNECT proxy: requests and watches through it, proxy
credentials, a proxy that refuses, goes silent or restarts)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from kubesched.cluster.kubeclient import KubeClient, from_kubeconfig
from kubesched.errors import TransportError
from kubesched.testing.controlplane import ControlPlane

pytestmark = pytest.mark.controlplane


def kubeconfig(cp: ControlPlane, tmp_path: Path, **cluster: str) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": cp.url, "certificate-authority": str(cp.ca_file), **cluster}}],
        "users": [{"name": "u", "user": {"token": cp.admin_token}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


class ConnectProxy:
    """A small HTTP CONNECT proxy: relays bytes both ways; records each CONNECT target; optional Basic auth."""

    def __init__(self, credentials: str = "", silent: bool = False) -> None:
        self.credentials = credentials
        self.silent = silent
        self.targets: list[str] = []
        self.server: asyncio.Server | None = None
        self.port = 0
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self, port: int = 0) -> None:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.server.wait_closed()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        upstream: asyncio.StreamWriter | None = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if self.silent:
                await reader.read()
                return
            lines = head.decode().split("\r\n")
            target = lines[0].split()[1]
            self.targets.append(target)
            if self.credentials:
                sent = next((ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("proxy-author")), "")
                if sent != "Basic " + base64.b64encode(self.credentials.encode()).decode():
                    writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    return
            host, _, port = target.rpartition(":")
            up_reader, upstream = await asyncio.open_connection(host.strip("[]"), int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(relay(reader, upstream), relay(up_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            if upstream is not None:
                upstream.close()
            writer.close()


async def relay(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    with contextlib.suppress(OSError, RuntimeError):
        dst.write_eof()


@contextlib.asynccontextmanager
async def running(proxy: ConnectProxy) -> AsyncIterator[ConnectProxy]:
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()


async def node_names(client: KubeClient) -> list[str]:
    body = json.loads(await client.request("GET", "/api/v1/nodes"))
    return [item["metadata"]["name"] for item in body["items"]]


async def test_tls_server_name_is_the_name_the_certificate_is_checked_against(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    cp = control_plane
    good = KubeClient(from_kubeconfig(kubeconfig(cp, tmp_path, **{"tls-server-name": "kubernetes.default.svc"})))
    try:
        await node_names(good)
    finally:
        await good.aclose()
    wrong = KubeClient(from_kubeconfig(kubeconfig(cp, tmp_path, **{"tls-server-name": "not-the-apiserver.example"})))
    try:
        with pytest.raises(TransportError, match=r"not-the-apiserver\.example"):
            await node_names(wrong)
    finally:
        await wrong.aclose()


async def test_requests_and_watches_go_through_the_proxy(control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = control_plane
    async with running(ConnectProxy(credentials="alice:s3cret/!")) as proxy:
        url = f"http://alice:s3cret%2F%21@127.0.0.1:{proxy.port}"
        client = KubeClient(from_kubeconfig(kubeconfig(cp, tmp_path, **{"proxy-url": url})))
        try:
            await node_names(client)
            watch = {"watch": "1", "timeoutSeconds": "1"}
            lines = [line async for line in client.stream_lines("/api/v1/namespaces", watch, read_timeout=10)]
            assert any(b'"ADDED"' in line for line in lines)  # the namespaces that exist, as ADDED events
        finally:
            await client.aclose()
        host_port = cp.url.removeprefix("https://")
        assert proxy.targets and set(proxy.targets) == {host_port}


async def test_a_refusing_a_silent_and_a_restarted_proxy(control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = control_plane
    async with running(ConnectProxy(credentials="alice:right")) as proxy:
        url = f"http://alice:wrong@127.0.0.1:{proxy.port}"
        client = KubeClient(from_kubeconfig(kubeconfig(cp, tmp_path, **{"proxy-url": url})))
        try:
            with pytest.raises(TransportError, match=r"refused CONNECT .*407 Proxy Authentication Required"):
                await node_names(client)
        finally:
            await client.aclose()

    async with running(ConnectProxy(silent=True)) as proxy:
        path = kubeconfig(cp, tmp_path, **{"proxy-url": f"http://127.0.0.1:{proxy.port}"})
        client = KubeClient(from_kubeconfig(path), connect_timeout=1.0)
        try:
            with pytest.raises(TransportError, match=r"no answer in 1.0s"):
                await node_names(client)
        finally:
            await client.aclose()

    proxy = ConnectProxy()
    await proxy.start()
    client = KubeClient(from_kubeconfig(kubeconfig(cp, tmp_path, **{"proxy-url": f"http://127.0.0.1:{proxy.port}"})))
    try:
        await node_names(client)
        await proxy.stop()  # the kept connection dies with the proxy
        with pytest.raises(TransportError):
            await node_names(client)
        await proxy.start(proxy.port)
        await node_names(client)  # a new connection through the restarted proxy
        assert len(proxy.targets) == 2
    finally:
        await client.aclose()
        await proxy.stop()
