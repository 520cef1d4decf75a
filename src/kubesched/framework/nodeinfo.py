"""One node seen through the node table (`NodeInfo`): what per-node plugins and queueing hints read.

Re-exported by interfaces.py; its own module so that events.py (a queueing hint's argument) needs no plugin API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubesched.api.core import Node
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo


@dataclass(frozen=True)
class NodeInfo:
    """One node seen through the table, for per-node plugins."""

    table: NodeTable
    row: int

    @property
    def node(self) -> Node:
        return self.table.node(self.row)

    @property
    def name(self) -> str:
        return self.table.names[self.row]

    @property
    def pods(self) -> Mapping[str, PodInfo]:
        return self.table.pods_on(self.row)
