"""Each pod's last scheduling decision, kept by a running scheduler for `kubesched explain --scheduler`.

`DecisionRecords` is a bounded map (least recently decided first out), fed by `RecordingWriter`, which
wraps the scheduler's `ClusterWriter` and notes what it reports: `Scheduled` (the node) or
`FailedScheduling` (kube-scheduler's message, the nomination). One record is a few hundred bytes.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence

import msgspec

from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.core.podinfo import PodInfo
from kubesched.scheduler.engine.writer import ClusterWriter

DEFAULT_RECORDS = 10_000


class Decision(msgspec.Struct, rename="camel", frozen=True):
    """One pod's last decision as the scheduler reported it (the JSON of /debug/decisions/NS/NAME)."""

    pod: str
    uid: str
    scheduler_name: str
    result: str  # Scheduled, Unschedulable, SchedulerError
    node: str | None
    message: str
    nominated_node: str | None
    time: float  # seconds since the epoch
    attempts: int


class DecisionRecords:
    """The last decision of at most ``size`` pods (0: none kept)."""

    def __init__(self, size: int = DEFAULT_RECORDS, now: Callable[[], float] = time.time) -> None:
        if size < 0:
            raise ValueError(f"decision records: {size} must be 0 or more")
        self.size = size
        self._records: OrderedDict[str, Decision] = OrderedDict()
        self._now = now

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> Decision | None:
        return self._records.get(key)

    def recent(self, limit: int) -> Iterator[Decision]:
        """The most recent decisions first."""
        for i, key in enumerate(reversed(self._records)):
            if i >= limit:
                return
            yield self._records[key]

    def note(
        self, pod: PodInfo, scheduler_name: str, result: str, node: str | None, message: str, nominated: str | None
    ) -> None:
        if not self.size:
            return
        before = self._records.pop(pod.key, None)
        attempts = before.attempts + 1 if before is not None and before.uid == pod.uid else 1
        self._records[pod.key] = Decision(
            pod.key, pod.uid, scheduler_name, result, node, message, nominated, self._now(), attempts
        )
        while len(self._records) > self.size:
            self._records.popitem(last=False)


class RecordingWriter:
    """A `ClusterWriter` that records each decision it reports, then passes everything to ``inner``."""

    def __init__(self, inner: ClusterWriter, records: DecisionRecords) -> None:
        self.inner = inner
        self.records = records

    @property
    def binds_inline(self) -> bool:
        return self.inner.binds_inline

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        await self.inner.bind(pod, node_name)

    async def evict(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> None:
        await self.inner.evict(victim, preemptor, node_name)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        await self.inner.set_nominated_node(pod, node_name)

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self.inner.pdbs()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.inner.namespace_labels(namespace)

    async def bound_node(self, pod: PodInfo) -> str | None:
        return await self.inner.bound_node(pod)

    def scheduled(self, pod: PodInfo, node: str, scheduler_name: str) -> None:
        self.records.note(pod, scheduler_name, "Scheduled", node, "", None)
        self.inner.scheduled(pod, node, scheduler_name)

    def failed(self, pod: PodInfo, scheduler_name: str, reason: str, message: str, nominated: str | None) -> None:
        self.records.note(pod, scheduler_name, reason, None, message, nominated or None)
        self.inner.failed(pod, scheduler_name, reason, message, nominated)

    async def aclose(self) -> None:
        await self.inner.aclose()
