"""Cluster sources: list+watch of the API server, feeding a ClusterCache or the scheduler's event methods.

`KubeSource` watches nodes (and pods, where usage matters); the cache counts as synced once what it
watches is listed. The extender and the webhook feed the cache itself (`CacheFeed`); the scheduler
feeds its own event methods, which update the cache and move its queue (`scheduler_source`, which
also watches what the scheduler reads beside nodes and pods).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from kubesched.api.core import Namespace, Node, Pod, ReplicationController, Service, Workload
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.kubeclient import KubeClient
from kubesched.cluster.objects import ClusterObjects
from kubesched.cluster.reflector import Handlers, Reflector
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.volumes import VolumeObjects
from kubesched.cluster.workloads import Selectors, Workloads
from kubesched.errors import ClusterError

# Finished pods hold no resources; the server filters them out of the stream.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
Item = TypeVar("Item", Service, ReplicationController, Workload)


class Feed(Protocol):
    """What a watch of nodes and pods calls (the scheduler's event methods have these names)."""

    def nodes_replaced(self, nodes: list[Node]) -> None: ...
    def node_upserted(self, node: Node) -> None: ...
    def node_deleted(self, node: Node) -> None: ...
    def pods_replaced(self, pods: list[Pod]) -> None: ...
    def pod_upserted(self, pod: Pod) -> None: ...
    def pod_deleted(self, pod: Pod) -> None: ...


class CacheFeed:
    """The cache itself as the feed."""

    def __init__(self, cache: ClusterCache) -> None:
        self.nodes_replaced = cache.replace_nodes
        self.node_upserted = cache.upsert_node
        self.pods_replaced = cache.replace_pods
        self.cache = cache

    def pod_upserted(self, pod: Pod) -> None:
        self.cache.upsert_pod(pod)

    def node_deleted(self, node: Node) -> None:
        self.cache.delete_node(node.metadata.name)

    def pod_deleted(self, pod: Pod) -> None:
        self.cache.delete_pod(pod.metadata.uid)


class KubeSource:
    """List + watch of nodes (and of pods, where the policy needs usage) from the API server, and of
    ``more`` resources beside them (they do not count for the cache's sync)."""

    def __init__(
        self,
        cache: ClusterCache,
        client: KubeClient,
        *,
        watch_pods: bool,
        watch_timeout: int | None = None,
        feed: Feed | None = None,
        more: Sequence[Reflector[Any]] = (),
    ) -> None:
        self.cache = cache
        self.client = client
        self.watch_pods = watch_pods
        self.more = list(more)
        feed = feed if feed is not None else CacheFeed(cache)
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
            Handlers(feed.nodes_replaced, feed.node_upserted, feed.node_deleted, lambda: synced("nodes")),
            watch_timeout=watch_timeout,
        )
        self.pods: Reflector[Pod] = Reflector(
            client,
            "/api/v1/pods",
            Pod,
            Handlers(feed.pods_replaced, feed.pod_upserted, feed.pod_deleted, lambda: synced("pods")),
            field_selector=ACTIVE_PODS,
            watch_timeout=watch_timeout,
        )
        cache.tracks_pods = watch_pods

    async def run(self) -> None:
        tasks = [self.nodes.run()] + ([self.pods.run()] if self.watch_pods else []) + [r.run() for r in self.more]
        await asyncio.gather(*tasks)

    def describe(self) -> str:
        return f"cluster {self.client.conn.server} ({self.client.conn.source})"


def scheduler_source(
    client: KubeClient,
    cache: ClusterCache,
    feed: Feed,
    objects: ClusterObjects,
    workloads: Workloads,
    *,
    watch_timeout: int | None = None,
    volumes: VolumeObjects | None = None,
) -> KubeSource:
    """What the scheduler watches: nodes and pods into ``feed`` (its event methods; synced once both are
    listed), PodDisruptionBudgets and namespaces into ``objects``, what selects pods into ``workloads``
    (PodTopologySpread's default constraints, as kube-scheduler's informers), and PVs, claims, StorageClasses
    and CSINodes into ``volumes`` (the volume plugins)."""

    def watch(path: str, kind: type[Any], handlers: Handlers[Any]) -> Reflector[Any]:
        return Reflector(client, path, kind, handlers, watch_timeout=watch_timeout)

    more = [
        watch(
            "/apis/policy/v1/poddisruptionbudgets",
            PodDisruptionBudget,
            Handlers(objects.replace_pdbs, objects.upsert_pdb, objects.delete_pdb),
        ),
        watch(
            "/api/v1/namespaces",
            Namespace,
            Handlers(objects.replace_namespaces, objects.upsert_namespace, objects.delete_namespace),
        ),
        watch("/api/v1/services", Service, _into(workloads.services)),
        watch("/api/v1/replicationcontrollers", ReplicationController, _into(workloads.controllers)),
        watch("/apis/apps/v1/replicasets", Workload, _into(workloads.replica_sets)),
        watch("/apis/apps/v1/statefulsets", Workload, _into(workloads.stateful_sets)),
    ]
    if volumes is not None:
        more += _storage_watches(volumes, watch)
    return KubeSource(cache, client, watch_pods=True, watch_timeout=watch_timeout, feed=feed, more=more)


def _storage_watches(volumes: VolumeObjects, watch: Any) -> list[Reflector[Any]]:
    v = volumes
    return [
        watch("/api/v1/persistentvolumes", PersistentVolume, Handlers(v.replace_pvs, v.upsert_pv, v.delete_pv)),
        watch(
            "/api/v1/persistentvolumeclaims",
            PersistentVolumeClaim,
            Handlers(v.replace_pvcs, v.upsert_pvc, v.delete_pvc),
        ),
        watch(
            "/apis/storage.k8s.io/v1/storageclasses",
            StorageClass,
            Handlers(v.replace_classes, v.upsert_class, v.delete_class),
        ),
        watch(
            "/apis/storage.k8s.io/v1/csinodes",
            CSINode,
            Handlers(v.replace_csinodes, v.upsert_csinode, v.delete_csinode),
        ),
    ]


RESOURCE_API = "/apis/resource.k8s.io/v1"


async def watch_resources(
    client: KubeClient, resources: ResourceObjects, *, recheck: float = 60.0, watch_timeout: int | None = None
) -> None:
    """DeviceClasses, ResourceSlices and ResourceClaims into ``resources``, once the API server says it
    serves resource.k8s.io/v1; a server without it (404) is asked again every ``recheck`` seconds, and
    the scheduler runs meanwhile with ``resources.served`` False."""
    delay = 1.0
    while True:
        try:
            await client.request("GET", RESOURCE_API)
            break
        except ClusterError as err:  # APIError: 404 when the group is not served
            status = getattr(err, "status", None)
            resources.served = False
            await asyncio.sleep(recheck if status == 404 else delay)
        except OSError:
            await asyncio.sleep(delay)
        delay = min(delay * 2, 30.0)

    def watch(path: str, kind: type[Any], handlers: Handlers[Any]) -> Reflector[Any]:
        return Reflector(client, f"{RESOURCE_API}/{path}", kind, handlers, watch_timeout=watch_timeout)

    r = resources
    reflectors = [
        watch("deviceclasses", DeviceClass, Handlers(r.replace_classes, r.upsert_class, r.delete_class)),
        watch("resourceslices", ResourceSlice, Handlers(r.replace_slices, r.upsert_slice, r.delete_slice)),
        watch("resourceclaims", ResourceClaim, Handlers(r.replace_claims, r.upsert_claim, r.delete_claim)),
    ]
    resources.served = True
    await asyncio.gather(*(x.run() for x in reflectors))


def _into(store: Selectors[Item, Any]) -> Handlers[Item]:
    return Handlers(store.replace, store.upsert, store.delete)
