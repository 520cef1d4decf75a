"""Toleration matching (k8s.io/api core/v1 toleration.go) and the taints a pod leaves untolerated.

The batch helpers decide toleration once per *distinct* taint of a node table and combine the
row masks of the untolerated ones, so their cost does not grow with the number of nodes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np

from kubesched.api.core import Taint, Toleration
from kubesched.core.nodeindex import TaintIndex
from kubesched.core.nodetable import BoolColumn, IntColumn, Rows

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
# The effects Filter plugins enforce (helper.DoNotScheduleTaintsFilterFunc).
DO_NOT_SCHEDULE = frozenset({NO_SCHEDULE, NO_EXECUTE})

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect=NO_SCHEDULE)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether one toleration tolerates one taint (Toleration.ToleratesTaint)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    # Lt/Gt compare integers only with the TaintTolerationComparisonOperators gate (alpha, off in
    # 1.35); without it they, like any unknown operator, never match.
    return toleration.operator == "Exists"


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Whether any of the tolerations tolerates the taint (TolerationsTolerateTaint)."""
    return any(tolerates(t, taint) for t in tolerations)


def first_untolerated(
    taints: Iterable[Taint], tolerations: Collection[Toleration], effects: Collection[str]
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates (FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if taint.effect in effects and not tolerated(tolerations, taint):
            return taint
    return None


def untolerated_masks(
    index: TaintIndex, tolerations: Collection[Toleration], effects: Collection[str]
) -> list[BoolColumn]:
    """Row masks (over the whole table) of the distinct taints with one of ``effects`` left untolerated."""
    return [
        mask
        for taint, mask in zip(index.taints, index.rows_with, strict=True)
        if taint.effect in effects and not tolerated(tolerations, taint)
    ]


def any_untolerated(
    index: TaintIndex, tolerations: Collection[Toleration], effects: Collection[str], rows: Rows
) -> BoolColumn:
    """Per row of ``rows``: does the node carry a taint with one of ``effects`` that is not tolerated?"""
    out = np.zeros(len(rows), dtype=np.bool_)
    for mask in untolerated_masks(index, tolerations, effects):
        out |= mask[rows]
    return out


def count_untolerated(
    index: TaintIndex, tolerations: Collection[Toleration], effects: Collection[str], rows: Rows
) -> IntColumn:
    """Per row of ``rows``: how many of the node's taints with one of ``effects`` are not tolerated."""
    out = np.zeros(len(rows), dtype=np.int64)
    for mask in untolerated_masks(index, tolerations, effects):
        out += mask[rows]
    return out
