"""Diagnosis answers which nodes failed with which status, and which plugins rejected some node."""

from __future__ import annotations

import numpy as np

from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.status import Status


def rows(*r: int) -> np.ndarray:
    return np.array(r, dtype=np.intp)


def test_nodes_are_grouped_by_status_and_the_narrowed_away_ones_get_the_absent_status() -> None:
    small, taint = Status.unschedulable("Insufficient cpu"), Status.unresolvable("untolerated taint")
    d = Diagnosis(absent=Status.unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"))
    d.add(rows(1, 3, 4), np.array([1, 2, 1], dtype=np.int32), (small, taint), "Fit")
    d.add(rows(5), np.array([1], dtype=np.int32), (small,))
    groups = d.by_status(rows(0, 1, 2, 3, 4, 5, 6), rows(0), 7)
    assert [(s, r.tolist()) for s, r in groups] == [
        (small, [1, 4]),
        (taint, [3]),
        (small, [5]),
        (d.absent, [2, 6]),
    ]


def test_a_prefilter_rejection_covers_every_candidate() -> None:
    rejected = Status.unresolvable("no").with_plugin("P")
    d = Diagnosis(pre_filter=rejected)
    assert [(s, r.tolist()) for s, r in d.by_status(rows(2, 3), rows(), 4)] == [(rejected, [2, 3])]
    assert d.plugins() == {"P"}


def test_the_rejecting_plugins_come_from_the_stage_or_from_each_status() -> None:
    d = Diagnosis()
    d.add(rows(0), np.array([1], dtype=np.int32), (Status.unschedulable("x"),), "Named")
    d.add(
        rows(1, 2),
        np.array([1, 2], dtype=np.int32),
        (Status.unschedulable("a").with_plugin("A"), Status.unschedulable("b").with_plugin("B")),
    )
    d.add(rows(3), np.array([1], dtype=np.int32), (Status.unschedulable("anonymous"),))
    assert d.plugins() == {"Named", "A", "B"}
