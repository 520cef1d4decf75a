"""What the scheduler needs of a cluster beyond the plugins' ClusterAPI: reporting, as kube-scheduler does it.

Two implementations: `api.APIServerWriter` (the API server) and `memory.MemoryCluster` (`--cluster FILE`).
Reports are fire-and-forget: the scheduling cycle never waits for them.
"""

from __future__ import annotations

from typing import Protocol

from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import ClusterAPI

UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"


class ClusterWriter(ClusterAPI, Protocol):
    """The cluster the scheduler writes to: the plugins' `ClusterAPI` (bind, evict, …) plus reports."""

    @property
    def binds_inline(self) -> bool:
        """Whether `bind` never awaits (the in-memory cluster): binding cycles that only bind through it
        may then run without a task each (see `Binder`)."""

    async def bound_node(self, pod: PodInfo) -> str | None:
        """Where the pod is bound now: its node, '' while pending, None when it is gone; raises
        ClusterAPIError when the cluster cannot say (the scheduler asks after a binding's answer was lost)."""

    def scheduled(self, pod: PodInfo, node: str, scheduler_name: str) -> None:
        """A `Scheduled` event: `Successfully assigned <ns>/<name> to <node>`."""

    def failed(self, pod: PodInfo, scheduler_name: str, reason: str, message: str, nominated: str | None) -> None:
        """PodScheduled=False with ``reason`` and ``message``, a `FailedScheduling` event, and
        status.nominatedNodeName when ``nominated`` is not None ('' clears it)."""

    async def aclose(self) -> None:
        """Wait for reports in flight and release connections."""
