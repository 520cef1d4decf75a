"""The extender's link to kube-apiserver going silent, reset or away: it keeps serving and catches up.

The extender follows nodes and pods through list + watch. Behind `FaultProxy` the link goes silent
without a reset (the hardest case: only timeouts can tell), then comes back; a node added meanwhile must
reach the extender's cache within 30 s of the link's return, and SIGTERM must end the process quickly
even while every connection is silent.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx
import pytest

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
from kubesched.testing.waiting import wait_until

from .extender_harness import Extender, grant_extender_rbac

pytestmark = pytest.mark.controlplane


def _passes(ext: Extender, node: str) -> bool:
    """Whether the extender's /filter lets a plain pod onto ``node`` (it must know the node to say yes)."""
    pod = {"metadata": {"name": "probe", "namespace": "default", "uid": "probe-uid"}, "spec": {"containers": []}}
    body = json.dumps({"Pod": pod, "NodeNames": [node]})
    reply = httpx.post(f"{ext.url}/filter", content=body, timeout=5).json()
    return node in (reply.get("NodeNames") or [])


def _proxied(cp: ControlPlane, proxy: FaultProxy, tmp_path: Path) -> Path:
    kubeconfig = grant_extender_rbac(cp)
    proxied = tmp_path / "proxied.kubeconfig"
    proxied.write_text(kubeconfig.read_text().replace(cp.url, f"https://{proxy.address}"))
    return proxied


def test_the_extender_catches_up_within_30s_after_its_link_went_silent(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    cp = control_plane
    host, port = cp.url.removeprefix("https://").rsplit(":", 1)
    name = f"silent-{int(time.time() * 1000) % 10**8}"
    with FaultProxy(host, int(port)) as proxy:
        ext = Extender(_proxied(cp, proxy, tmp_path), tmp_path).start()
        try:
            proxy.blackhole()
            cp.create_node(name, labels={"custom": "true"}, allocatable={"cpu": "4", "memory": "8Gi", "pods": "10"})
            # While silent: the extender still answers (from its cache), and cannot know the new node.
            for _ in range(5):
                assert httpx.get(f"{ext.url}/healthz", timeout=5).status_code == 200
                assert not _passes(ext, name)
                time.sleep(1)  # the silence's length is the behaviour under test
            time.sleep(15)  # 20 s of silence in all: longer than a watch's own server-side timeout
            proxy.heal()
            started = time.monotonic()
            wait_until(lambda: _passes(ext, name), "the node added during the silence", within=30)
            print(f"caught up {time.monotonic() - started:.1f}s after the link came back")
        finally:
            ext.stop()
            cp.delete_node(name)


def test_sigterm_ends_the_extender_quickly_while_its_link_is_silent(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    cp = control_plane
    host, port = cp.url.removeprefix("https://").rsplit(":", 1)
    with FaultProxy(host, int(port)) as proxy:
        ext = Extender(_proxied(cp, proxy, tmp_path), tmp_path).start()
        assert ext.proc is not None
        try:
            # The extender's connections (its list and watches) pass through the proxy; then all go silent,
            # and so does every new one: the watches are stuck.
            wait_until(lambda: proxy.counts.accepted >= 2, "the extender's connections through the proxy", within=30)
            proxy.blackhole()
            started = time.monotonic()
            ext.proc.send_signal(signal.SIGTERM)
            code = ext.proc.wait(15)
            took = time.monotonic() - started
            assert code == 0, ext.log.read_text()[-2000:]
            assert took < 10, f"SIGTERM took {took:.1f}s"
            print(f"exited {took:.1f}s after SIGTERM")
        finally:
            ext.stop()
