"""The cluster source (list + watch) against the real kube-apiserver: adds, updates, deletes, ended
watches, 410 Gone, and /readyz turning ready only after the first sync."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.kubeclient import KubeClient, from_kubeconfig
from kubesched.cluster.reflector import Gone
from kubesched.cluster.source import KubeSource
from kubesched.extender.app import ExtenderApp
from kubesched.extender.service import ExtenderService
from kubesched.framework.runtime import Framework
from kubesched.policies import load, registry_for
from kubesched.testing import build
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.waiting import until

pytestmark = pytest.mark.controlplane
RES = "example.com/custom-resource"


@contextlib.asynccontextmanager
async def running_source(kubeconfig: Path, watch_timeout: int = 300) -> AsyncIterator[tuple[ClusterCache, KubeSource]]:
    cache = ClusterCache()
    client = KubeClient(from_kubeconfig(kubeconfig))
    source = KubeSource(cache, client, watch_pods=True, watch_timeout=watch_timeout)
    task = asyncio.create_task(source.run())
    try:
        await asyncio.wait_for(cache.synced.wait(), 20)
        yield cache, source
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.aclose()


def _alloc(cache: ClusterCache, name: str) -> int:
    row = cache.table.index[name]
    return int(cache.table.allocatable(RES)[row])


async def test_cache_follows_node_adds_updates_and_deletes(control_plane: ControlPlane) -> None:
    cp = control_plane
    cp.create_node(
        "src-a", labels={"custom": "true"}, allocatable={"cpu": "4", "memory": "8Gi", "pods": "110", RES: "3"}
    )
    try:
        async with running_source(cp.admin_kubeconfig) as (cache, _):
            assert _alloc(cache, "src-a") == 3  # from the initial list
            await asyncio.to_thread(cp.create_node, "src-b", allocatable={"cpu": "1", "pods": "10", RES: "1"})
            await until(lambda: "src-b" in cache.table.index, "src-b added")
            await asyncio.to_thread(
                cp.api, "PATCH", "/api/v1/nodes/src-a/status", {"status": {"allocatable": {RES: "7"}}}
            )
            await until(lambda: _alloc(cache, "src-a") == 7, "src-a allocatable updated to 7")
            await asyncio.to_thread(cp.api, "PATCH", "/api/v1/nodes/src-b", {"metadata": {"labels": {"custom": "yes"}}})
            await until(
                lambda: (cache.table.node(cache.table.index["src-b"]).metadata.labels or {}).get("custom") == "yes",
                "src-b relabelled",
            )
            await asyncio.to_thread(cp.delete_node, "src-b")
            await until(lambda: "src-b" not in cache.table.index, "src-b deleted")
            assert "src-a" in cache.table.index
    finally:
        cp.delete_node("src-a")
        cp.delete_node("src-b")


async def test_cache_counts_bound_pods_and_forgets_deleted_ones(
    control_plane: ControlPlane, kube_namespace: str
) -> None:
    cp = control_plane
    cp.create_node("src-p", allocatable={"cpu": "4", "memory": "8Gi", "pods": "110", RES: "5"})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "user"},
        "spec": {
            "nodeName": "src-p",
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {RES: "2"}, "limits": {RES: "2"}}}
            ],
        },
    }
    try:
        async with running_source(cp.admin_kubeconfig) as (cache, _):
            row = cache.table.index["src-p"]
            assert int(cache.table.requested(RES)[row]) == 0
            await asyncio.to_thread(cp.api, "POST", f"/api/v1/namespaces/{kube_namespace}/pods", pod)
            await until(lambda: int(cache.table.requested(RES)[row]) == 2, "the bound pod to be counted")
            await asyncio.to_thread(
                cp.api, "DELETE", f"/api/v1/namespaces/{kube_namespace}/pods/user", params={"gracePeriodSeconds": "0"}
            )
            await until(lambda: int(cache.table.requested(RES)[row]) == 0, "the deleted pod to be forgotten")
    finally:
        cp.delete_node("src-p")


async def test_survives_watches_the_server_ends(control_plane: ControlPlane) -> None:
    cp = control_plane
    # A 1 s server-side timeout: the API server closes every watch almost at once.
    async with running_source(cp.admin_kubeconfig, watch_timeout=1) as (cache, source):
        await until(lambda: source.nodes.watches >= 3, "two watches ended by the server and resumed", within=20)
        await asyncio.to_thread(cp.create_node, "src-late", allocatable={"cpu": "1", "pods": "10"})
        try:
            await until(lambda: "src-late" in cache.table.index, "a node added after several ended watches")
            assert source.nodes.lists == 1, "an ended watch must resume from its resourceVersion, not relist"
        finally:
            cp.delete_node("src-late")


async def test_relists_after_410_gone(control_plane_binaries: build.Binaries) -> None:
    # A control plane of its own, without the watch cache, so that watches read etcd directly: once
    # etcd is compacted past the reflector's resourceVersion the server answers a real 410 Gone.
    with ControlPlane(control_plane_binaries, apiserver_flags={"watch-cache": "false"}) as cp:
        cp.create_node("gone-a", allocatable={"cpu": "1", "pods": "10"})
        cache = ClusterCache()
        client = KubeClient(from_kubeconfig(cp.admin_kubeconfig))
        source = KubeSource(cache, client, watch_pods=False, watch_timeout=5)
        try:
            await source.nodes.list()
            stale = source.nodes.resource_version
            for i in range(3):  # move etcd's revision on, then compact the history away
                await asyncio.to_thread(
                    cp.api, "PATCH", "/api/v1/nodes/gone-a", {"metadata": {"labels": {"n": str(i)}}}
                )
            async with httpx.AsyncClient() as etcd:
                head = (await etcd.post(f"{cp.etcd_url}/v3/kv/range", json={"key": "YQ=="})).json()
                r = await etcd.post(
                    f"{cp.etcd_url}/v3/kv/compaction", json={"revision": head["header"]["revision"], "physical": True}
                )
                r.raise_for_status()
            with pytest.raises(Gone):
                await source.nodes.watch()
            assert source.nodes.resource_version == stale
            task = asyncio.create_task(source.nodes.run(resume=True))
            try:
                await until(lambda: source.nodes.lists == 2, "a relist after 410 Gone")
                await until(
                    lambda: (cache.table.node(cache.table.index["gone-a"]).metadata.labels or {}).get("n") == "2",
                    "the relisted cache to hold the updates made while the watch was gone",
                )
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            await client.aclose()


async def test_readyz_turns_ready_only_after_the_first_sync(control_plane: ControlPlane) -> None:
    cp = control_plane
    policy = load("custom-label")
    cache = ClusterCache()
    client = KubeClient(from_kubeconfig(cp.admin_kubeconfig))
    app = ExtenderApp(ExtenderService(policy, Framework.build(policy.profile, registry_for(policy)), cache, client))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ext") as http:
        assert (await http.get("/readyz")).status_code == 503
        task = asyncio.create_task(KubeSource(cache, client, watch_pods=True).run())
        try:
            await asyncio.wait_for(cache.synced.wait(), 20)
            r = await http.get("/readyz")
            assert r.status_code == 200 and r.text == "ok"
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await client.aclose()
