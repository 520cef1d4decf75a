"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from kubesched.api.node_fields import NodeFields
from kubesched.core.podinfo import PodInfo
from kubesched.core.tolerations import UNSCHEDULABLE_TAINT, tolerated
from kubesched.framework.events import NODE_CHANGE, ClusterEventWithHint
from kubesched.framework.interfaces import CycleState, NodeBatch, SignFragments, SignPlugin, StaticFilterPlugin
from kubesched.framework.status import Status, Verdicts

ERR_REASON = "node(s) were unschedulable"


class NodeUnschedulable(StaticFilterPlugin, SignPlugin):
    """Filter: a cordoned node fails unless the pod tolerates node.kubernetes.io/unschedulable:NoSchedule."""

    name: ClassVar[str] = "NodeUnschedulable"
    node_fields = NodeFields(unschedulable=True)
    reads_pods: ClassVar[bool] = False
    _status = Status.unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or changed, if it now lets the pod on (upstream: Node Add|UpdateNodeTaint)."""
        return [ClusterEventWithHint(NODE_CHANGE, self.passes_node)]

    def shape(self, pod: PodInfo) -> Hashable:
        return tolerated(pod.tolerations, UNSCHEDULABLE_TAINT)

    def sign(self, pod: PodInfo) -> SignFragments:
        # The tolerations themselves (finer than tolerating the cordon, and cheaper to compare).
        return (("tolerations", tuple((t.key, t.operator, t.value, t.effect) for t in pod.tolerations)),)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        if tolerated(pod.tolerations, UNSCHEDULABLE_TAINT):
            return Verdicts.all_pass(len(nodes))
        return Verdicts.from_mask(nodes.table.unschedulable()[nodes.rows], self._status)
