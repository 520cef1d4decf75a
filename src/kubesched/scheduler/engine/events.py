"""The scheduler's answers to cluster events: nodes and pods added, changed, deleted or replaced.

The watch of the API server (`cluster.source`) and the in-memory cluster of `--cluster FILE` call these
methods of the `Scheduler`: they keep the cache current and move the pods a change may help.
"""

from __future__ import annotations

import time

from kubesched.api.core import Node, Pod
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import CLAIM_CHANGE, CLASS_CHANGE, SLICE_CHANGE, ActionType, ClusterEvent, EventResource
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.state import Placement, SchedulerState

_TERMINAL = ("Succeeded", "Failed")
_RESOURCE_EVENTS = {
    "ResourceClaim": ClusterEvent(CLAIM_CHANGE.resource, ActionType.UPDATE),
    "ResourceSlice": ClusterEvent(SLICE_CHANGE.resource, ActionType.UPDATE),
    "DeviceClass": ClusterEvent(CLASS_CHANGE.resource, ActionType.UPDATE),
}


class ClusterEvents(SchedulerState):
    """Node and pod events, in the cache and the queue (the watch and the in-memory cluster call these).

    Each is timed under kube-scheduler's event label (scheduler_event_handling_duration_seconds).
    """

    def _handled(self, event: str, began: float) -> None:
        self.metrics.event_handling.observe((event,), time.perf_counter() - began)

    def node_upserted(self, node: Node) -> None:
        began = time.perf_counter()
        row = self.cache.table.index.get(node.metadata.name)
        old = self.cache.table.nodes[row] if row is not None else None
        self.cache.upsert_node(node)
        row = self.cache.table.index.get(node.metadata.name)
        if old is None:
            self.queue.on_event(q.NODE_ADD, row)
        elif (old.metadata.labels, old.spec, old.status.allocatable, old.status.declared_features) != (
            node.metadata.labels,
            node.spec,
            node.status.allocatable,
            node.status.declared_features,
        ):
            self.queue.on_event(q.NODE_UPDATE, row)
        self._handled("NodeAdd" if old is None else "NodeUpdate", began)

    def node_deleted(self, node: Node) -> None:
        began = time.perf_counter()
        self.cache.delete_node(node.metadata.name)
        self._handled("NodeDelete", began)

    def nodes_replaced(self, nodes: list[Node]) -> None:
        self.cache.replace_nodes(nodes)
        self.queue.on_event(q.NODE_ADD)

    def pod_upserted(self, pod: Pod) -> None:
        began, uid = time.perf_counter(), pod.metadata.uid
        if pod.spec.node_name or pod.status.phase in _TERMINAL:
            # Our own binding's echo is an add to the assigned pods, as upstream's informer handlers see it.
            known = self.cache.pod_node(uid) is not None and not self.cache.is_assumed(uid)
            event = "AssignedPodUpdate" if known else "AssignedPodAdd"
        else:
            event = self.queue.unscheduled + ("Update" if uid in self.queue else "Add")
        try:
            self._pod_upserted(pod)
        finally:
            self._handled(event, began)

    def _pod_upserted(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        if pod.spec.node_name or pod.status.phase in _TERMINAL:
            was = self.cache.pod_node(uid)
            before = self.cache.pod(uid) if was is not None else None
            recounted = self.cache.upsert_pod(pod)
            if uid in self._uncertain:
                self._uncertain.settle(uid, pod.spec.node_name or None)
            self._forget_pending(uid)
            if pod.status.phase in _TERMINAL:
                if was is not None:
                    self.queue.on_event(q.POD_DELETE, pod=self.cache.compile(pod))
            elif was is None:
                self.queue.on_event(q.POD_ADD, pod=self.cache.compile(pod))
            elif recounted and before is not None and _scaled_down(before, self.cache.pod(uid)):
                self.queue.on_event(q.POD_UPDATE, pod=self.cache.compile(pod))  # an in-place resize freed room
            return
        if self.cache.is_assumed(uid):
            return  # ours, its binding is in flight
        if pod.metadata.deletion_timestamp:
            self._forget_pending(uid)
            return
        name = self.profile_for(pod)
        if name not in self.built.profiles:
            self._foreign[uid] = pod
            self.queue.delete(uid)
            return
        entry = self.queue.get(uid)
        if entry is not None and not _changed(entry.info.pod, pod):
            return  # only the status moved (our own condition patch, for one)
        info = self.cache.compile(pod)
        self.queue.add(info, name)
        if pod.status.nominated_node_name and self.nominator.node_of(uid) is None:
            # As kube-scheduler's queue.Add: a nomination the API holds (an earlier run's preemption) counts.
            self.nominator.add(info, pod.status.nominated_node_name)
        self.placements.setdefault(_key(pod), Placement(_key(pod)))

    def pod_deleted(self, pod: Pod) -> None:
        began, uid = time.perf_counter(), pod.metadata.uid
        was = self.cache.pod_node(uid)
        self.cache.delete_pod(uid)
        if uid in self._uncertain:
            self._uncertain.settle(uid, None)
        self._forget_pending(uid)
        waiting = self.waiting.get(uid)
        if waiting is not None:
            waiting.reject("", "pod deleted")
        if was is not None:
            self.queue.on_event(q.POD_DELETE, pod=self.cache.compile(pod))
        self._handled(self.queue.unscheduled + "Delete" if was is None else "AssignedPodDelete", began)

    def volume_changed(self, kind: str, action: str) -> None:
        """A PersistentVolume, claim, StorageClass or CSINode was added, updated or deleted (`VolumeObjects`
        calls this): move the parked pods a volume plugin that registered the event rejected."""
        began, event = time.perf_counter(), ClusterEvent(EventResource(kind), ActionType[action.upper()])
        self.queue.on_event(event)
        self._handled(event.label, began)

    def resources_changed(self, kind: str) -> None:
        """A DeviceClass, ResourceSlice or ResourceClaim was added or changed (a claim's deletion frees its
        devices): move the pods waiting on such objects, gated by PreEnqueue or parked."""
        began, event = time.perf_counter(), _RESOURCE_EVENTS.get(kind)
        if event is not None:
            self.queue.on_event(event)
            self._handled(event.label, began)

    def pods_replaced(self, pods: list[Pod]) -> None:
        """After a (re)list: the cache holds exactly these; queued pods that vanished are dropped."""
        self.cache.replace_pods(pods)
        seen = set()
        for pod in pods:
            seen.add(pod.metadata.uid)
            if not pod.spec.node_name:
                self.pod_upserted(pod)
        for entry in self.queue.entries():
            if entry.info.uid not in seen:
                self.queue.delete(entry.info.uid)
        self._foreign = {u: p for u, p in self._foreign.items() if u in seen}
        self.queue.on_event(q.POD_DELETE)


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _changed(old: Pod, new: Pod) -> bool:
    """Whether a pending pod changed in a way that may change its scheduling (not just its status)."""
    return (
        old.spec != new.spec
        or old.metadata.labels != new.metadata.labels
        or old.metadata.annotations != new.metadata.annotations
        or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        or old.status.resource_claim_statuses != new.status.resource_claim_statuses  # a claim was made for it
    )


def _scaled_down(before: PodInfo, after: PodInfo | None) -> bool:
    """Whether a bound pod now counts less of some resource (kube-scheduler's UpdatePodScaleDown)."""
    if after is None:
        return False
    now = after.requests
    return any(now.get(name, 0) < amount for name, amount in before.requests.items())
