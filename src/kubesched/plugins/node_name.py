"""NodeName: a pod that names its node fits only that node."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from kubesched.api.node_fields import NodeFields
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_ADD, ClusterEventWithHint
from kubesched.framework.interfaces import CycleState, NodeBatch, SignFragments, SignPlugin, StaticFilterPlugin
from kubesched.framework.status import Status, Verdicts

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(StaticFilterPlugin, SignPlugin):
    """Filter: ``spec.nodeName`` empty or equal to the node's name."""

    name: ClassVar[str] = "NodeName"
    node_fields = NodeFields()
    reads_pods: ClassVar[bool] = False
    _status = Status.unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only a node added, if it is the one the pod names (upstream: Node Add)."""
        return [ClusterEventWithHint(NODE_ADD, self.passes_node)]

    def shape(self, pod: PodInfo) -> Hashable:
        return pod.pod.spec.node_name

    def sign(self, pod: PodInfo) -> SignFragments:
        return (("nodeName", pod.pod.spec.node_name),)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return Verdicts.all_pass(len(nodes))
        row = nodes.table.index.get(wanted)
        return Verdicts.from_mask(nodes.rows != (-1 if row is None else row), self._status)
