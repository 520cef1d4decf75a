"""PrioritySort (QueueSort): higher priority first, then the pod that entered the queue earlier."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.node_fields import NodeFields
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    """Orders the active queue by ``spec.priority`` (absent: 0) descending, then queue timestamp ascending.

    The queue refreshes the timestamp each time a pod is re-added after a failed attempt, so a retried
    pod goes behind equal-priority pods that arrived meanwhile, as upstream.
    """

    name: ClassVar[str] = "PrioritySort"
    node_fields = NodeFields()
    reads_pods: ClassVar[bool] = False

    def sort_key(self, pod: PodInfo, queued_at: float) -> tuple[Any, ...]:
        return (-pod.priority, queued_at)
