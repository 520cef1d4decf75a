"""The scheduling queue: which pod the scheduler tries next, and when a failed pod is tried again.

Four places a pending pod can be (kube-scheduler's backend/queue, in one small object)::

    add ──PreEnqueue ok──> active ──pop──> in flight ──scheduled──> (gone)
     │                       ▲                 │
     │ PreEnqueue rejects    │ backoff over    ├─ error ─────────────> backoff
     ▼                       │                 └─ unschedulable ─────> unschedulable
    gated ──pod update──> backoff <──────── cluster event that may help, or 5 min in the pool

* active: a heap ordered by the profile's QueueSort key (PrioritySort: priority, then arrival);
* backoff: pods waiting out 1 s doubling per attempt up to 10 s before going active again;
* unschedulable: pods that did not fit; a cluster event one of their rejecting plugins cares about
  (a node added or changed, a pod deleted or finished) moves them out, and none stays over 5 minutes;
* gated: pods a PreEnqueue plugin (SchedulingGates) holds back until the pod itself changes.

A pod rejected while an event that could help it arrived during its cycle goes to backoff instead of
the pool, so the event is not lost. Time comes from an injected clock; nothing here awaits.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_ADD as NODE_ADD
from kubesched.framework.events import NODE_UPDATE as NODE_UPDATE
from kubesched.framework.events import POD_ADD as POD_ADD
from kubesched.framework.events import POD_DELETE as POD_DELETE
from kubesched.framework.events import POD_UPDATE as POD_UPDATE
from kubesched.framework.events import ClusterEvent
from kubesched.framework.status import SUCCESS, Code, Status

UNSCHEDULABLE_TIMEOUT = 300.0
ACTIVE, BACKOFF, UNSCHEDULABLE, GATED = "active", "backoff", "unschedulable", "gated"

# scheduler_queue_incoming_pods_total's event labels, as kube-scheduler spells them; a cluster event's is
# its ClusterEvent.label, a pending pod's `SchedulingQueue.unscheduled` + Add or Update (the release's word).
ATTEMPT_FAILURE, BACKOFF_COMPLETE, TIMEOUT_EVENT = "ScheduleAttemptFailure", "BackoffComplete", "UnschedulableTimeout"


class Clock(Protocol):
    def now(self) -> float: ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()


class ManualClock:
    """Time that moves only when told to: unit tests, and the in-memory cluster skipping idle waits."""

    def __init__(self, start: float = 0.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def advance_to(self, t: float) -> None:
        self.t = max(self.t, t)


@dataclass(eq=False)
class QueuedPod:
    """A pending pod and its scheduling history."""

    info: PodInfo
    profile: str
    first_queued_at: float
    queued_at: float
    attempts: int = 0
    backoff_until: float = 0.0
    unschedulable_since: float = 0.0
    unschedulable_plugins: frozenset[str] = frozenset()
    gate: Status = SUCCESS
    where: str = ""
    cycle_moves: int = 0  # the queue's move counter when the pod was popped
    flushed: bool = False  # left the pool by the 5-minute timeout (scheduler_pod_scheduled_after_flush_total)
    version: int = 0  # bumps on every push into a heap; stale heap entries are skipped


SortKey = Callable[[PodInfo, float], tuple[Any, ...]]
PreEnqueue = Callable[[QueuedPod], Status]
# (a parked pod, the event, the table row of the node it concerns, the pod it concerns): may it help the pod?
Interest = Callable[[QueuedPod, ClusterEvent, int | None, PodInfo | None], bool]


def priority_then_arrival(pod: PodInfo, queued_at: float) -> tuple[Any, ...]:
    """PrioritySort's order, used until a profile says otherwise."""
    return (-pod.priority, queued_at)


class SchedulingQueue:
    """Active heap, backoff heap, unschedulable pool and gated pods, keyed by pod UID."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        sort_key: SortKey = priority_then_arrival,
        pre_enqueue: PreEnqueue | None = None,
        interested: Interest | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_timeout: float = UNSCHEDULABLE_TIMEOUT,
        notify: Callable[[], None] | None = None,
        gate_interested: Callable[[QueuedPod, ClusterEvent], bool] | None = None,
    ) -> None:
        self.clock = clock or MonotonicClock()
        self.sort_key = sort_key
        self.pre_enqueue = pre_enqueue or (lambda _: SUCCESS)
        self.interested = interested or (lambda _p, _e, _n, _o: True)
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_timeout = unschedulable_timeout
        # Whether an attempt that failed with an Error status backs off and is tried again (kube-scheduler's way, for
        # live clusters, where the error may pass). In memory (`--cluster`) nothing changes between retries: such a
        # pod waits in the unschedulable pool, for a cluster event, as an unschedulable one does.
        self.retry_errors = True
        self.notify = notify or (lambda: None)
        # Whether an event may lift a PreEnqueue rejection (the rejecting plugin registered it); SchedulingGates
        # registers none: its pods wait for their own update.
        self.gate_interested = gate_interested or (lambda _p, _e: False)
        self._pods: dict[str, QueuedPod] = {}  # every pod the queue holds, in flight included
        self._active: list[tuple[tuple[Any, ...], int, str, int]] = []
        self._backoff: list[tuple[float, int, str, int]] = []
        self._seq = 0
        self._moves = 0
        self._counts = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0, "": 0}
        # Pods put into each place by event: kube-scheduler's scheduler_queue_incoming_pods_total{queue,event}
        # (gated pods count as "unschedulable", where kube-scheduler keeps them).
        self.incoming: dict[tuple[str, str], int] = {}
        self.unscheduled = "UnscheduledPod"  # v1.37's word; "UnschedulablePod" under v1.35 (`Release`)
        self._event = "UnscheduledPodAdd"  # what moves the pods now being placed

    def unschedulable_by_plugin(self) -> dict[tuple[str, str], int]:
        """Queued pods (not in flight) per (rejecting or gating plugin, profile): kube-scheduler's
        scheduler_unschedulable_pods{plugin,profile}, counted until the pod is tried again."""
        out: dict[tuple[str, str], int] = {}
        for entry in self._pods.values():
            if not entry.where:
                continue
            plugins = entry.unschedulable_plugins
            if entry.where == GATED and entry.gate.plugin:
                plugins = plugins | {entry.gate.plugin}
            for plugin in plugins:
                key = (plugin, entry.profile)
                out[key] = out.get(key, 0) + 1
        return out

    # ---- membership ------------------------------------------------------------------------------

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, uid: str) -> QueuedPod | None:
        return self._pods.get(uid)

    def entries(self) -> list[QueuedPod]:
        return list(self._pods.values())

    def pending(self) -> dict[str, int]:
        """Pods per place (kube-scheduler's scheduler_pending_pods{queue}); in-flight pods are not counted."""
        return {k: v for k, v in self._counts.items() if k}

    def in_flight(self) -> int:
        """Pods popped and not yet back or done (kube-scheduler's inflight PodPopped events)."""
        return self._counts[""]

    def _set_where(self, entry: QueuedPod, where: str) -> None:
        before = entry.where
        self._counts[before] -= 1
        entry.where = where
        self._counts[where] += 1
        if where and where != before:  # a re-sort or an update in place puts nothing in
            key = (UNSCHEDULABLE if where == GATED else where, self._event)
            self.incoming[key] = self.incoming.get(key, 0) + 1

    # ---- input -----------------------------------------------------------------------------------

    def add(self, info: PodInfo, profile: str) -> None:
        """A new pending pod (or a known one again: then it is an update)."""
        if info.uid in self._pods:
            self.update(info, profile)
            return
        now = self.clock.now()
        entry = QueuedPod(info, profile, first_queued_at=now, queued_at=now)
        self._pods[info.uid] = entry
        self._counts[""] += 1
        self._event = self.unscheduled + "Add"
        self._enqueue(entry)

    def update(self, info: PodInfo, profile: str) -> None:
        """The pod object changed: gated or parked pods get another chance."""
        entry = self._pods.get(info.uid)
        if entry is None:
            self.add(info, profile)
            return
        entry.info, entry.profile = info, profile
        self._event = self.unscheduled + "Update"
        if entry.where == GATED:
            self._enqueue(entry)
        elif entry.where == UNSCHEDULABLE:
            self._move(entry)
        elif entry.where == ACTIVE:
            self._push_active(entry)  # the sort key may have changed (priority)

    def delete(self, uid: str) -> None:
        entry = self._pods.pop(uid, None)
        if entry is not None:
            self._counts[entry.where] -= 1
            entry.version += 1  # heap entries go stale

    def _enqueue(self, entry: QueuedPod) -> None:
        """Run PreEnqueue: active if it passes, gated otherwise."""
        entry.gate = self.pre_enqueue(entry)
        if entry.gate.ok:
            if entry.backoff_until > self.clock.now():
                self._push_backoff(entry)
            else:
                self._push_active(entry)
        elif entry.gate.code == Code.ERROR and not self.retry_errors:
            # A PreEnqueue plugin failed, in memory: asked again only after a cluster event.
            entry.unschedulable_since = self.clock.now()
            entry.version += 1
            self._set_where(entry, UNSCHEDULABLE)
        elif entry.gate.code == Code.ERROR:
            # A PreEnqueue plugin failed (not a gate): PreEnqueue is tried again after a backoff.
            entry.attempts += 1
            entry.backoff_until = self.clock.now() + self.backoff_duration(entry.attempts)
            self._push_backoff(entry)
        else:
            entry.version += 1
            self._set_where(entry, GATED)

    def _push_active(self, entry: QueuedPod) -> None:
        entry.version += 1
        self._seq += 1
        heapq.heappush(
            self._active, (self.sort_key(entry.info, entry.queued_at), self._seq, entry.info.uid, entry.version)
        )
        self._set_where(entry, ACTIVE)
        self.notify()

    def _push_backoff(self, entry: QueuedPod) -> None:
        entry.version += 1
        self._seq += 1
        heapq.heappush(self._backoff, (entry.backoff_until, self._seq, entry.info.uid, entry.version))
        self._set_where(entry, BACKOFF)

    # ---- the scheduling loop's side ------------------------------------------------------------------

    def pop(self) -> QueuedPod | None:
        """The next pod to schedule (now in flight), or None when nothing is active."""
        if self._backoff or self._counts[UNSCHEDULABLE]:  # else there is nothing to flush (nor a clock to read)
            self.flush()
        while self._active:
            _, _, uid, version = heapq.heappop(self._active)
            entry = self._pods.get(uid)
            if entry is None or entry.version != version or entry.where != ACTIVE:
                continue
            entry.attempts += 1
            entry.cycle_moves = self._moves
            entry.version += 1
            self._set_where(entry, "")
            return entry
        return None

    def done(self, uid: str) -> None:
        """The pod was scheduled (assumed): the queue lets go of it."""
        self.delete(uid)

    def requeue(self, entry: QueuedPod, *, plugins: frozenset[str] = frozenset(), error: bool = False) -> None:
        """Put back a pod whose attempt failed: backoff after an error, else the unschedulable pool."""
        if self._pods.get(entry.info.uid) is not entry or entry.where:
            return  # deleted (or re-added) while in flight
        now = self.clock.now()
        entry.queued_at = now  # a retried pod goes behind equal-priority pods that arrived meanwhile
        entry.backoff_until = now + self.backoff_duration(entry.attempts)
        entry.unschedulable_plugins = plugins
        self._event = ATTEMPT_FAILURE
        if (error and self.retry_errors) or entry.cycle_moves != self._moves:
            self._push_backoff(entry)
        else:
            entry.unschedulable_since = now
            entry.version += 1
            self._set_where(entry, UNSCHEDULABLE)

    def add_failed(self, entry: QueuedPod, *, plugins: frozenset[str] = frozenset(), error: bool = True) -> None:
        """A pod whose binding failed after it left the queue: back in, with its history."""
        if entry.info.uid in self._pods:
            return
        entry.where, entry.version = "", entry.version + 1
        self._pods[entry.info.uid] = entry
        self._counts[""] += 1
        self.requeue(entry, plugins=plugins, error=error)

    def backoff_duration(self, attempts: int) -> float:
        """1 s doubled for each attempt after the first, at most 10 s (the configured values)."""
        duration = self.initial_backoff
        for _ in range(1, attempts):
            duration *= 2
            if duration >= self.max_backoff:
                return self.max_backoff
        return min(duration, self.max_backoff)

    def flush(self) -> None:
        """Backoff pods whose time is up become active; pods parked too long leave the pool."""
        now = self.clock.now()
        self._event = BACKOFF_COMPLETE
        while self._backoff and self._backoff[0][0] <= now:
            _, _, uid, version = heapq.heappop(self._backoff)
            entry = self._pods.get(uid)
            if entry is not None and entry.version == version and entry.where == BACKOFF:
                if entry.gate.code == Code.ERROR:
                    self._enqueue(entry)  # its PreEnqueue failed: run it again first
                else:
                    self._push_active(entry)
        if self._counts[UNSCHEDULABLE]:
            limit = now - self.unschedulable_timeout
            self._event = TIMEOUT_EVENT
            for entry in [
                e for e in self._pods.values() if e.where == UNSCHEDULABLE and e.unschedulable_since <= limit
            ]:
                entry.flushed = True
                self._move(entry)

    def next_backoff_expiry(self) -> float | None:
        """When the earliest backoff ends (stale heap entries may make this early: harmless)."""
        return self._backoff[0][0] if self._backoff else None

    # ---- cluster events ------------------------------------------------------------------------------

    def on_event(self, event: ClusterEvent, node: int | None = None, pod: PodInfo | None = None, skip: str = "") -> int:
        """A cluster event (about the node at table row ``node`` or about ``pod``, if given): move the
        parked pods it may help (never the pod of UID ``skip``); returns how many moved."""
        self._moves += 1
        moved = 0
        self._event = event.label
        if self._counts[UNSCHEDULABLE]:
            for entry in [e for e in self._pods.values() if e.where == UNSCHEDULABLE and e.info.uid != skip]:
                if self.interested(entry, event, node, pod):
                    self._move(entry)
                    moved += 1
        if self._counts[GATED]:
            for entry in [e for e in self._pods.values() if e.where == GATED and e.info.uid != skip]:
                if entry.gate.plugin and self.gate_interested(entry, event):
                    self._enqueue(entry)  # PreEnqueue again: it may still hold the pod
                    moved += entry.where != GATED
        return moved

    def _move(self, entry: QueuedPod) -> None:
        """Out of the pool: through PreEnqueue again (a plugin may hold it back), then backoff or active."""
        self._enqueue(entry)

    def resort(self, sort_key: SortKey) -> None:
        """A new QueueSort order (after a config reload): rebuild the active heap."""
        self.sort_key = sort_key
        for entry in [e for e in self._pods.values() if e.where == ACTIVE]:
            self._push_active(entry)

    def recheck_gates(self) -> None:
        """Run PreEnqueue again for every gated pod (after a config reload changed the plugins)."""
        for entry in [e for e in self._pods.values() if e.where == GATED]:
            self._enqueue(entry)
