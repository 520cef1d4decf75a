"""What the scheduler's parts share: its attributes, declared once, and the few helpers they all use.

`Scheduler` (scheduler.py) sets these up; `ClusterEvents` (events.py) and `Failures` (failures.py) are
the parts of it that answer cluster events and failed attempts or bindings, written against this state.
`Placement` is where a pod went, or why it did not.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from kubesched.api.core import Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME
from kubesched.framework.guard import FrameworkError
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.binding import Binder, WaitingPods
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.engine.cycle import Cycle
from kubesched.scheduler.engine.extenders import Extenders
from kubesched.scheduler.engine.hints import QueueingHints
from kubesched.scheduler.engine.nominator import Nominator
from kubesched.scheduler.engine.unknown import UnknownBindings
from kubesched.scheduler.engine.writer import ClusterWriter
from kubesched.scheduler.metrics import SchedulerMetrics

log = logging.getLogger("kubesched.scheduler")


@dataclass(slots=True)
class Placement:
    """Where a pod went, or why it did not (the embedded default prints these)."""

    pod: str
    node: str | None = None
    reason: str | None = None


class SchedulerState:
    """The scheduler's state, as its parts see it (set by `Scheduler.__init__`)."""

    cache: ClusterCache
    cluster: ClusterWriter
    metrics: SchedulerMetrics
    built: Built
    extenders: Extenders
    queue: q.SchedulingQueue
    cycle: Cycle
    binder: Binder
    hints: QueueingHints
    nominator: Nominator
    waiting: WaitingPods
    placements: dict[str, Placement]  # by pod key, for the embedded default's report
    _uncertain: UnknownBindings  # pods whose binding's answer was lost, still counted on their node
    _foreign: dict[str, Pod]  # pending pods of other schedulers, kept for a reload
    _binding: dict[str, q.QueuedPod]  # pods in their binding cycle
    _background: set[asyncio.Task[Any]]

    def profile_for(self, pod: Pod) -> str:
        return pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME

    def _forget_pending(self, uid: str) -> None:
        self.queue.delete(uid)
        self._binding.pop(uid, None)
        self.nominator.remove(uid)
        self._foreign.pop(uid, None)

    def _plugin_failed(self, profile: str, err: FrameworkError) -> None:
        self.metrics.plugin_error(profile, err.status.plugin, err.point)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.warning("background task failed: %s", t.exception())

        task.add_done_callback(done)
