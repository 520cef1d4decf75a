"""The Known differences the differential test accepts: each a predicate over a case and its reason.

docs/scheduler.md ("Differential test") lists the same entries by id; tests/docs checks that it does.
Anything else kube-scheduler and kubesched disagree on is a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubesched.testing.differential.runner import Case


@dataclass(frozen=True)
class KnownDifference:
    """``id`` (named in docs/scheduler.md), ``reason``, and ``applies``: whether it explains a case."""

    id: str
    reason: str
    predicate: Callable[[Case], bool]

    def applies(self, case: Case) -> bool:
        return self.predicate(case)


def _empty_nodes_scored(case: Case) -> bool:
    """Only the placement differs, with an extender that returns whole nodes."""
    return case.full_nodes and set(case.differences) == {"placement"}


KNOWN: tuple[KnownDifference, ...] = (
    KnownDifference(
        "extender-full-nodes-scores",
        "with a filter extender of nodeCacheCapable false, kube-scheduler v1.35 wraps the nodes the extender "
        "returns in new, empty NodeInfos, so its Score plugins see every feasible node without its pods "
        "(kubernetes/kubernetes#141781, a regression from #130537; fix proposed in #141919); kubesched scores "
        "the nodes as they are. Placement only: the feasible set and messages agree.",
        _empty_nodes_scored,
    ),
)
