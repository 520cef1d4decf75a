"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; untolerated PreferNoSchedule ones cost score."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn
from kubesched.core.podinfo import PodInfo
from kubesched.core.tolerations import DO_NOT_SCHEDULE, PREFER_NO_SCHEDULE, any_untolerated, count_untolerated
from kubesched.framework.events import NODE_CHANGE, ClusterEventWithHint
from kubesched.framework.interfaces import (
    CycleState,
    NodeBatch,
    ScorePlugin,
    SignFragments,
    SignPlugin,
    StaticFilterPlugin,
)
from kubesched.framework.status import Status, Verdicts
from kubesched.plugins.helpers.normalize import default_normalize_score

ERR_REASON = "node(s) had untolerated taint(s)"
_PREFER = frozenset({PREFER_NO_SCHEDULE})


class TaintToleration(StaticFilterPlugin, ScorePlugin, SignPlugin):
    """Filter on NoSchedule/NoExecute taints; Score counts untolerated PreferNoSchedule taints, reversed.

    Upstream's PreScore only gathers the tolerations Score uses and never skips, so it is folded into Score.
    """

    name: ClassVar[str] = "TaintToleration"
    node_fields = NodeFields(taints=True)
    reads_pods: ClassVar[bool] = False
    default_weight: ClassVar[int] = 3
    _status = Status.unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or changed, if the pod now tolerates its taints (upstream: Node Add|UpdateNodeTaint)."""
        return [ClusterEventWithHint(NODE_CHANGE, self.passes_node)]

    def shape(self, pod: PodInfo) -> Hashable:
        return tuple((t.key, t.operator, t.value, t.effect) for t in pod.tolerations)

    def sign(self, pod: PodInfo) -> SignFragments:
        return (("tolerations", self.shape(pod)),)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        index = nodes.table.taint_index()
        if not index.taints:
            return Verdicts.all_pass(len(nodes))
        return Verdicts.from_mask(any_untolerated(index, pod.tolerations, DO_NOT_SCHEDULE, nodes.rows), self._status)

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        index = nodes.table.taint_index()
        if not index.taints:
            return np.zeros(len(nodes), dtype=np.int64)  # no taint anywhere: nothing to count
        return count_untolerated(index, pod.tolerations, _PREFER, nodes.rows)

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        return default_normalize_score(scores, reverse=True)
