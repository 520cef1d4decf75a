"""Plugin results with kube-scheduler's status codes, and per-node verdicts of a batch filter."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


class Code(enum.IntEnum):
    """kube-scheduler's status codes (framework/interface.go)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


REJECTED = (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)


@dataclass(frozen=True)
class Status:
    """A plugin's answer: a code, the reasons behind it and the plugin that gave it."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in REJECTED

    def with_plugin(self, plugin: str) -> Status:
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin)

    @staticmethod
    def unschedulable(*reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE, reasons)

    @staticmethod
    def unresolvable(*reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @staticmethod
    def error(message: str) -> Status:
        return Status(Code.ERROR, (message,))


SUCCESS = Status()
SKIP = Status(Code.SKIP)

Codes = npt.NDArray[np.int32]


class Verdicts:
    """A batch filter's answer for each candidate: 0 passes, k > 0 fails with ``statuses[k - 1]``.

    A plain slotted class, not a dataclass: one is made per plugin per pod, on the hot path.
    """

    __slots__ = ("all_passed", "codes", "failed", "statuses")

    def __init__(
        self, codes: Codes, statuses: Sequence[Status] = (), failed: npt.NDArray[np.bool_] | None = None
    ) -> None:
        self.codes = codes
        self.statuses = statuses
        self.failed = failed  # codes != 0, when the plugin has it at hand
        self.all_passed = False  # True only from all_pass(): lets the framework skip looking

    def __repr__(self) -> str:
        return f"Verdicts(codes={self.codes!r}, statuses={self.statuses!r})"

    @staticmethod
    def all_pass(n: int) -> Verdicts:
        verdicts = Verdicts(np.zeros(n, dtype=np.int32), (), np.zeros(n, dtype=np.bool_))
        verdicts.all_passed = True
        return verdicts

    @staticmethod
    def from_mask(failed: npt.NDArray[np.bool_], status: Status) -> Verdicts:
        """Nodes where ``failed`` is True fail with ``status``; the others pass."""
        return Verdicts(failed.view(np.int8).astype(np.int32), (status,), failed)
