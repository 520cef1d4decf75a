"""Cluster sources: feed a ClusterCache from a file (the embedded default) or from a live cluster."""

from __future__ import annotations

import asyncio

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.kubeclient import KubeClient
from kubesched.cluster.reflector import Handlers, Reflector

# Finished pods hold no resources; the server filters them out of the stream.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"


class KubeSource:
    """List + watch of nodes (and of pods, where the policy needs usage) from the API server."""

    def __init__(
        self, cache: ClusterCache, client: KubeClient, *, watch_pods: bool, watch_timeout: int | None = None
    ) -> None:
        self.cache = cache
        self.client = client
        self.watch_pods = watch_pods
        done: set[str] = set()
        wanted = {"nodes", "pods"} if watch_pods else {"nodes"}

        def synced(kind: str) -> None:
            done.add(kind)
            if done >= wanted:
                cache.synced.set()

        self.nodes: Reflector[Node] = Reflector(
            client,
            "/api/v1/nodes",
            Node,
            Handlers(
                cache.replace_nodes,
                cache.upsert_node,
                lambda n: cache.delete_node(n.metadata.name),
                lambda: synced("nodes"),
            ),
            watch_timeout=watch_timeout,
        )
        self.pods: Reflector[Pod] = Reflector(
            client,
            "/api/v1/pods",
            Pod,
            Handlers(
                cache.replace_pods,
                cache.upsert_pod,
                lambda p: cache.delete_pod(p.metadata.uid),
                lambda: synced("pods"),
            ),
            field_selector=ACTIVE_PODS,
            watch_timeout=watch_timeout,
        )
        cache.tracks_pods = watch_pods

    async def run(self) -> None:
        tasks = [self.nodes.run()] + ([self.pods.run()] if self.watch_pods else [])
        await asyncio.gather(*tasks)

    def describe(self) -> str:
        return f"cluster {self.client.conn.server} ({self.client.conn.source})"
