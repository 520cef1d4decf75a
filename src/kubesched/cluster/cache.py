"""The cluster cache: nodes in a NodeTable, bound and assumed pods counted on their nodes.

Pod lifecycle in the cache (as kube-scheduler's cache draws it)::

    assume ──> (bind confirmed by a watch event) ──> added ──> deleted
       └─────> forget (binding failed)

A pod whose node is not known yet waits in ``_orphans`` and is counted once the node appears.
Pods that have finished (Succeeded, Failed) take no resources and are not kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodCompiler, PodInfo, resize_key

_TERMINAL = ("Succeeded", "Failed")


class ClusterCache:
    """Nodes and the pods on them, fed by a cluster source; knows nothing of HTTP."""

    def __init__(self) -> None:
        self.table = NodeTable()
        self._where: dict[str, str] = {}  # pod uid -> node name
        self._orphans: dict[str, dict[str, PodInfo]] = {}  # node name -> uid -> pod
        self._assumed: set[str] = set()
        self.synced = asyncio.Event()
        self.tracks_pods = False
        # One compiler for every pod the cache or the scheduler sees: a workload's spec compiled once.
        self.compile = PodCompiler()

    # ---- nodes ------------------------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        name = node.metadata.name
        fresh = name not in self.table.index
        row = self.table.upsert(node)
        if fresh:
            for pod in self._orphans.pop(name, {}).values():
                self.table.add_pod(row, pod)

    def delete_node(self, name: str) -> None:
        row = self.table.index.get(name)
        if row is None:
            return
        pods = dict(self.table.pods_on(row))
        self.table.remove(name)
        if pods:
            self._orphans[name] = pods

    def replace_nodes(self, nodes: Iterable[Node]) -> None:
        """Make the node set exactly ``nodes`` (after a list or relist)."""
        nodes = list(nodes)
        keep = {n.metadata.name for n in nodes}
        for name in [n for n in self.table.index if n not in keep]:
            self.delete_node(name)
        for node in nodes:
            self.upsert_node(node)

    # ---- pods -------------------------------------------------------------------------------

    def _place(self, info: PodInfo, node_name: str) -> None:
        self._where[info.uid] = node_name
        row = self.table.index.get(node_name)
        if row is None:
            self._orphans.setdefault(node_name, {})[info.uid] = info
        else:
            self.table.add_pod(row, info)

    def _unplace(self, uid: str) -> PodInfo | None:
        node_name = self._where.pop(uid, None)
        if node_name is None:
            return None
        row = self.table.index.get(node_name)
        if row is not None:
            return self.table.remove_pod(row, uid)
        return self._orphans.get(node_name, {}).pop(uid, None)

    def upsert_pod(self, pod: Pod) -> bool:
        """A pod seen by the watch: counted on its node while bound and not finished. True when it is
        counted anew (placed, moved, or what it counts changed), False when nothing it counts changed."""
        uid = pod.metadata.uid
        node_name = pod.spec.node_name
        if not node_name or pod.status.phase in _TERMINAL:
            if uid not in self._assumed or pod.status.phase in _TERMINAL:
                self._unplace(uid)
                self._assumed.discard(uid)
            return False
        if self._where.get(uid) == node_name and self._refresh(uid, node_name, pod):
            self._assumed.discard(uid)  # an assumed pod's binding confirmed: it stays counted as it is
            return False
        self._assumed.discard(uid)
        self._unplace(uid)  # moved, or its requests changed: count it anew
        self._place(self.compile(pod), node_name)
        return True

    def _refresh(self, uid: str, node_name: str, pod: Pod) -> bool:
        """Swap in the newer object of a pod held on ``node_name`` if the table would count it the same.

        The common case is the echo of our own binding: the assumed pod is already counted on that node,
        so it is confirmed with its new object instead of being removed and counted again. What
        `NodeTable.add_pod` derives from a pod is its usage (from the spec) and, for pods with pod
        (anti-)affinity, an index holding the object itself: those pods take the full path.
        """
        row = self.table.index.get(node_name)
        pods = self._orphans.get(node_name) if row is None else self.table.pods_on(row)
        old = pods.get(uid) if pods else None
        if old is None or pods is None or old.has_pod_affinity or not _same_footprint(old.pod, pod):
            return False
        pods[uid] = self.compile(pod)
        if row is not None:
            self.table.generation += 1  # as add_pod would: the pod object (its status, say) changed
        return True

    def delete_pod(self, uid: str) -> None:
        self._assumed.discard(uid)
        self._unplace(uid)

    def replace_pods(self, pods: Iterable[Pod]) -> None:
        seen = set()
        for pod in pods:
            seen.add(pod.metadata.uid)
            self.upsert_pod(pod)
        for uid in [u for u in self._where if u not in seen and u not in self._assumed]:
            self._unplace(uid)

    def assume(self, info: PodInfo, node_name: str) -> None:
        """Count a pod on a node before its binding is confirmed."""
        self._unplace(info.uid)
        self._assumed.add(info.uid)
        self._place(info, node_name)

    def forget(self, uid: str) -> None:
        """Undo `assume` after a failed binding."""
        if uid in self._assumed:
            self._assumed.discard(uid)
            self._unplace(uid)

    def pod_node(self, uid: str) -> str | None:
        return self._where.get(uid)

    def sizes(self) -> dict[str, int]:
        """kube-scheduler's scheduler_cache_size: nodes, pods (assumed ones included) and assumed pods."""
        return {"assumed_pods": len(self._assumed), "nodes": len(self.table), "pods": len(self._where)}

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def pod(self, uid: str) -> PodInfo | None:
        node_name = self._where.get(uid)
        if node_name is None:
            return None
        row = self.table.index.get(node_name)
        if row is not None:
            return self.table.pods_on(row).get(uid)
        return self._orphans.get(node_name, {}).get(uid)


def _same_footprint(old: Pod, new: Pod) -> bool:
    """Whether the node table derives the same from both objects: spec (nodeName aside), labels and the
    resources the status reports (an in-place resize changes what the pod counts)."""
    spec = old.spec
    if spec.node_name != new.spec.node_name:
        spec = msgspec.structs.replace(spec, node_name=new.spec.node_name)
    if spec != new.spec or old.metadata.labels != new.metadata.labels:
        return False
    reported = old.status.container_statuses or old.status.init_container_statuses
    return not (reported or new.status.container_statuses or new.status.init_container_statuses) or (
        resize_key(old) == resize_key(new)
    )
