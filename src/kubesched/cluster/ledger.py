"""The reservation ledger: pods the extender is binding, counted on their node before the watch says so.

kube-scheduler binds in the background, so the filter for its next pod arrives before the watch
reports the last binding. The ledger closes that window (kube-scheduler's own cache does the same
with AssumePod / FinishBinding / ForgetPod)::

    reserve ──(binding POST ok)──> finish ──(watch reports the pod, by UID)──> counted as bound
       │                             └──(no report within the TTL)──> expired
       ├──(binding POST refused)──> release
       ├──(409: already bound to node X)──> move to X (then as finish)
       └──(answer lost, read-back failed)──> unknown: kept (as finish) until the watch or a read-back says

A reservation is an assumed pod of the `ClusterCache`, so every reader of the node table (filter,
prioritize, preempt) counts it with no extra work. `reserve` runs the caller's check and counts the
pod in one synchronous call: with asyncio, nothing else runs in between, so allocation decisions are
serialized without a lock. Knows nothing of HTTP.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.cluster.cache import ClusterCache
from kubesched.core.podinfo import PodInfo

# Why 300 s: the TTL runs from a successful (or unknown) binding POST, so it matters only when the watch
# does not report the bound pod. While the watch is down, the pod IS bound: expiring it early would
# over-commit. A silent watch is found within ~25 s and resumed; 300 s also rides out an API server
# outage of a few minutes. A reservation outliving that is stale (its pod deleted during the gap).
DEFAULT_TTL = 300.0
_MEMO = 4096  # pods remembered from filter requests, for bind (which carries only the pod's name)


@dataclass
class Reservation:
    node: str
    deadline: float | None  # None while the binding POST is in flight
    unknown: bool = False  # the POST was sent and its answer lost: the pod may be bound there


class Ledger:
    """Reservations of one extender over its cluster cache."""

    def __init__(
        self, cache: ClusterCache, *, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"reservation TTL must be positive (got {ttl})")
        self.cache = cache
        self.ttl = ttl
        self.clock = clock
        self.entries: dict[str, Reservation] = {}
        self.next_deadline = float("inf")
        self._memo: OrderedDict[str, PodInfo] = OrderedDict()
        # Counters for the metrics endpoint.
        self.reserved = 0
        self.refused = 0
        self.released = 0
        self.expired = 0

    # ---- pods seen by filter --------------------------------------------------------------------

    def remember(self, info: PodInfo) -> None:
        """Keep a pod kube-scheduler asked about: its bind names it only by namespace, name and UID."""
        memo = self._memo
        memo[info.uid] = info
        if len(memo) > _MEMO:
            memo.popitem(last=False)

    def recall(self, uid: str) -> PodInfo | None:
        return self._memo.get(uid)

    # ---- reservations ---------------------------------------------------------------------------

    def reserve(self, info: PodInfo, node: str, check: Callable[[int], str | None]) -> str | None:
        """Count ``info`` on ``node`` if ``check(row)`` passes; return why not otherwise.

        ``check`` sees the node table with every other reservation counted. A previous reservation of
        the same pod is dropped first: a pod is bound once, and kube-scheduler asks again only after it
        was told the last binding failed.
        """
        self.release(info.uid, count=False)
        row = self.cache.table.index.get(node)
        if row is None:
            self.refused += 1
            return f"node {node} is not in the extender's node cache"
        if self.cache.pod_node(info.uid) is not None:
            # The watch already reports the pod bound: the API server will refuse the binding anyway.
            return None
        reason = check(row)
        if reason is not None:
            self.refused += 1
            return reason
        self.cache.assume(info, node)
        self.entries[info.uid] = Reservation(node, None)
        self.reserved += 1
        return None

    def finish(self, uid: str) -> None:
        """The binding was accepted: start the TTL, the time the watch has to report the pod."""
        entry = self.entries.get(uid)
        if entry is not None and entry.deadline is None:
            entry.deadline = self.clock() + self.ttl
            self.next_deadline = min(self.next_deadline, entry.deadline)

    def mark_unknown(self, uid: str) -> None:
        """The binding's answer was lost and reading the pod back failed: keep counting it (TTL runs)."""
        entry = self.entries.get(uid)
        if entry is not None:
            entry.unknown = True
            self.finish(uid)

    def unknown_node(self, uid: str) -> str | None:
        """The node of a reservation whose binding outcome is unknown, else None."""
        entry = self.entries.get(uid)
        return entry.node if entry is not None and entry.unknown else None

    def move(self, info: PodInfo, node: str) -> None:
        """The API server says the pod is bound to ``node``: count it there until the watch reports it."""
        if self.cache.pod_node(info.uid) == node and not self.cache.is_assumed(info.uid):
            self.entries.pop(info.uid, None)  # the watch has reported it there already
            return
        self.cache.assume(info, node)
        self.entries[info.uid] = Reservation(node, None)
        self.finish(info.uid)

    def release(self, uid: str, *, count: bool = True) -> None:
        """The binding failed: stop counting the pod (unless the watch has reported it meanwhile)."""
        if self.entries.pop(uid, None) is not None:
            self.cache.forget(uid)
            if count:
                self.released += 1

    def expire(self) -> None:
        """Drop reservations the watch has confirmed (cheap: only when a deadline has passed) and
        forget those whose TTL ran out. Callers test ``entries`` first, so an empty ledger costs nothing."""
        now = self.clock()
        if now < self.next_deadline:
            return
        self.sweep(now)

    def sweep(self, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        nxt = float("inf")
        for uid, entry in list(self.entries.items()):
            if not self.cache.is_assumed(uid):
                del self.entries[uid]  # confirmed (counted as bound), or deleted, by the watch
            elif entry.deadline is not None and entry.deadline <= now:
                del self.entries[uid]
                self.cache.forget(uid)
                self.expired += 1
            elif entry.deadline is not None:
                nxt = min(nxt, entry.deadline)
        self.next_deadline = nxt

    @property
    def held(self) -> int:
        """Reservations the watch has not confirmed yet."""
        return sum(1 for uid in self.entries if self.cache.is_assumed(uid))
