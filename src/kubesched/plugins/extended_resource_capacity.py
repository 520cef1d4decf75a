"""ExtendedResourceCapacity (Score): prefer nodes with more of an extended resource, 100 × it / the largest."""

from __future__ import annotations

from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeBatch,
    ScorePlugin,
    SignFragments,
    SignPlugin,
)


class ExtendedResourceCapacityArgs(msgspec.Struct, forbid_unknown_fields=True):
    resource: str = "example.com/custom-resource"


class ExtendedResourceCapacity(ScorePlugin, SignPlugin):
    name = "ExtendedResourceCapacity"
    reads_pods: ClassVar[bool] = False
    Args = ExtendedResourceCapacityArgs

    def __init__(self, args: ExtendedResourceCapacityArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or ExtendedResourceCapacityArgs(), handle)
        self.node_fields = NodeFields(resources=frozenset({self.args.resource}))

    def sign(self, pod: PodInfo) -> SignFragments:
        return ()  # scores depend on the nodes only

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        return nodes.table.allocatable(self.args.resource)[nodes.rows].copy()

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        top = int(scores.max()) if len(scores) else 0
        if top <= 0:
            return np.zeros_like(scores)
        return (scores * MAX_NODE_SCORE) // top
