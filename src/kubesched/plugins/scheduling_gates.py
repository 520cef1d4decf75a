"""SchedulingGates (PreEnqueue): a pod with scheduling gates waits outside the active queue."""

from __future__ import annotations

from typing import ClassVar

from kubesched.api.node_fields import NodeFields
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import PreEnqueuePlugin
from kubesched.framework.status import SUCCESS, Status


class SchedulingGates(PreEnqueuePlugin):
    """Rejects, UnschedulableAndUnresolvable, while ``spec.schedulingGates`` is not empty."""

    name: ClassVar[str] = "SchedulingGates"
    node_fields = NodeFields()
    reads_pods: ClassVar[bool] = False

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.pod.spec.scheduling_gates
        if not gates:
            return SUCCESS
        # Go's %v of a []string: the names in spec order, space-separated, in brackets.
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(g.name for g in gates)}]")
