"""A cycle's per-pod state and its candidate nodes: `CycleState`, `NodeBatch` (re-exported by interfaces.py).

At the bottom of the framework's layers: the handle's dry-run protocol and the plugin API both use them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.core.nodetable import NodeTable, Rows
from kubesched.framework.status import Code


class CycleState(dict[str, Any]):
    """Per-pod scratch space for one scheduling cycle; plugins key it by their own name."""

    def __init__(self) -> None:
        super().__init__()
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        # Set for a sample of the cycles (kube-scheduler's ShouldRecordPluginMetrics): called with
        # (plugin, extension point, status code, seconds) after each plugin call; None costs one test.
        self.timer: Callable[[str, str, Code, float], None] | None = None

    def clone(self) -> CycleState:
        """A shallow copy: writes to the copy do not reach this state."""
        copy = CycleState()
        copy.update(self)
        copy.skip_filter = set(self.skip_filter)
        copy.skip_score = set(self.skip_score)
        copy.timer = self.timer
        return copy


class NodeBatch:
    """The candidate nodes of one cycle: rows of a node table (a slotted class: made per plugin call)."""

    __slots__ = ("rows", "table")

    def __init__(self, table: NodeTable, rows: Rows) -> None:
        self.table = table
        self.rows = rows

    def __repr__(self) -> str:
        return f"NodeBatch({len(self.rows)} rows)"

    def __len__(self) -> int:
        return len(self.rows)

    def names(self) -> list[str]:
        names = self.table.names
        return [names[r] for r in self.rows.tolist()]
