"""Why nodes were rejected in one cycle, and kube-scheduler's "0/N nodes are available" message."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from kubesched.core.nodetable import Rows
from kubesched.framework.status import Codes, Status


class Rejection:
    """Rows one plugin rejected: row i failed with ``statuses[codes[i] - 1]``."""

    __slots__ = ("codes", "plugin", "rows", "statuses")

    def __init__(self, rows: Rows, codes: Codes, statuses: tuple[Status, ...], plugin: str = "") -> None:
        self.rows = rows
        self.codes = codes
        self.statuses = statuses
        self.plugin = plugin


@dataclass
class Diagnosis:
    """Every rejected node's first failing status, kept as arrays until someone asks."""

    rejections: list[Rejection] = field(default_factory=list)
    pre_filter: Status | None = None
    absent: Status | None = None
    post_filter_message: str = ""

    def add(self, rows: Rows, codes: Codes, statuses: tuple[Status, ...], plugin: str = "") -> None:
        if len(rows):
            self.rejections.append(Rejection(rows, codes, statuses, plugin))

    def items(self) -> Iterator[tuple[int, Status]]:
        """(row, status) for every rejected row, each status naming its plugin."""
        for rej in self.rejections:
            stamped = [s.with_plugin(rej.plugin) if rej.plugin else s for s in rej.statuses]
            for row, code in zip(rej.rows.tolist(), rej.codes.tolist(), strict=True):
                yield row, stamped[code - 1]

    def by_status(self, candidates: Rows, feasible: Rows, size: int) -> list[tuple[Status, Rows]]:
        """The rejected ``candidates`` grouped by status (as the plugins gave them, unstamped).

        A PreFilter rejection covers every candidate; candidates neither ``feasible`` nor rejected by a
        Filter plugin (PreFilter narrowed them away) get the ``absent`` status. ``size``: the table's.
        """
        groups: list[tuple[Status, Rows]] = []
        if self.pre_filter is not None:
            groups.append((self.pre_filter, candidates))
        for rej in self.rejections:
            if len(rej.statuses) == 1:
                groups.append((rej.statuses[0], rej.rows))
            else:
                groups.extend((status, rej.rows[rej.codes == code]) for code, status in enumerate(rej.statuses, 1))
        if self.absent is not None:
            decided = np.zeros(size, dtype=np.bool_)
            decided[feasible] = True
            for rej in self.rejections:
                decided[rej.rows] = True
            groups.append((self.absent, candidates[~decided[candidates]]))
        return groups

    def plugins(self) -> set[str]:
        """The plugins that rejected some node (kube-scheduler's UnschedulablePlugins), PreFilter's included."""
        names: set[str] = set()
        for rej in self.rejections:
            names.update([rej.plugin] if rej.plugin else [s.plugin for s in rej.statuses])
        if self.pre_filter is not None:
            names.add(self.pre_filter.plugin)
        names.discard("")
        return names

    def rejected_count(self) -> int:
        return sum(len(r.rows) for r in self.rejections)

    def reason_counts(self) -> dict[str, int]:
        """How many nodes gave each reason (a node counts once per reason of its status)."""
        counts: dict[str, int] = {}
        for rej in self.rejections:
            values, numbers = np.unique(rej.codes, return_counts=True)
            for code, n in zip(values.tolist(), numbers.tolist(), strict=True):
                for reason in rej.statuses[code - 1].reasons:
                    counts[reason] = counts.get(reason, 0) + n
        return counts

    def message(self, total_nodes: int) -> str:
        """kube-scheduler's FitError text (framework/types.go), for a snapshot of ``total_nodes``."""
        out = f"0/{total_nodes} nodes are available:"
        if self.pre_filter is not None:
            out += f" {self.pre_filter.message}."
        else:
            counts = self.reason_counts()
            missing = total_nodes - self.rejected_count()
            if missing > 0 and self.absent is not None:
                for reason in self.absent.reasons:
                    counts[reason] = counts.get(reason, 0) + missing
            if counts:
                out += " " + ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items())) + "."
        if self.post_filter_message:
            out += " " + self.post_filter_message
        return out
