"""RequiredLabel (Filter): nodes must carry a label key (any value), e.g. `custom`."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

import msgspec

from kubesched.api.node_fields import NodeFields
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import CycleState, Handle, NodeBatch, SignFragments, SignPlugin, StaticFilterPlugin
from kubesched.framework.status import Status, Verdicts


class RequiredLabelArgs(msgspec.Struct, forbid_unknown_fields=True):
    label: str = "custom"


class RequiredLabel(StaticFilterPlugin, SignPlugin):
    """Rejects nodes without the label, UnschedulableAndUnresolvable: preemption cannot add a label."""

    name = "RequiredLabel"
    reads_pods: ClassVar[bool] = False
    Args = RequiredLabelArgs

    def __init__(self, args: RequiredLabelArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or RequiredLabelArgs(), handle)
        self.node_fields = NodeFields(labels=frozenset({self.args.label}))
        if not self.args.label:
            raise ValueError("label: must not be empty")
        self._status = Status.unresolvable(f"node(s) didn't have label {self.args.label}")

    def shape(self, pod: PodInfo) -> Hashable:
        return None  # the same verdict for every pod

    def sign(self, pod: PodInfo) -> SignFragments:
        return ()

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        codes, _ = nodes.table.label_codes(self.args.label)
        return Verdicts.from_mask(codes[nodes.rows] < 0, self._status)
