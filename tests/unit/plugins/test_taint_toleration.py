from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.framework.interfaces import CycleState, NodeBatch
from kubesched.framework.status import Code, Status
from kubesched.plugins.taint_toleration import TaintToleration
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

UNTOLERATED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint(s)",))

NODES = [
    make_node("clean"),
    make_node("dedicated", taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
    make_node("draining", taints=[{"key": "drain", "effect": "NoExecute"}]),
    make_node("soft", taints=[{"key": "spot", "effect": "PreferNoSchedule"}]),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], [None, UNTOLERATED, UNTOLERATED, None]),
        ([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}], [None, None, UNTOLERATED, None]),
        ([{"key": "dedicated", "value": "web"}], [None, UNTOLERATED, UNTOLERATED, None]),
        ([{"key": "drain", "operator": "Exists", "effect": "NoExecute"}], [None, UNTOLERATED, None, None]),
        ([{"operator": "Exists"}], [None, None, None, None]),
    ],
    ids=["none", "equal", "other-value", "exists-noexecute", "tolerate-all"],
)
def test_filter(tolerations: list[dict[str, Any]], expected: list[Status | None]) -> None:
    table = make_table(NODES)
    verdicts = TaintToleration().filter(CycleState(), make_pod(tolerations=tolerations), batch(table))
    assert results(verdicts) == expected


def soft_node(name: str, *keys: str) -> Any:
    return make_node(name, taints=[{"key": k, "effect": "PreferNoSchedule"} for k in keys])


@pytest.mark.parametrize(
    ("tolerations", "raw", "normalized"),
    [
        ([], [0, 1, 2, 3], [100, 67, 34, 0]),
        ([{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}], [0, 0, 1, 2], [100, 100, 50, 0]),
        # A NoSchedule toleration does not tolerate a PreferNoSchedule taint.
        ([{"key": "a", "operator": "Exists", "effect": "NoSchedule"}], [0, 1, 2, 3], [100, 67, 34, 0]),
        ([{"operator": "Exists"}], [0, 0, 0, 0], [100, 100, 100, 100]),
    ],
    ids=["none", "tolerate-a", "noschedule-toleration", "all-tolerated"],
)
def test_score_counts_prefer_no_schedule_and_normalizes_in_reverse(
    tolerations: list[dict[str, Any]], raw: list[int], normalized: list[int]
) -> None:
    # The hard taint on "three" is ignored by Score.
    nodes = [
        make_node("none"),
        soft_node("one", "a"),
        soft_node("two", "a", "b"),
        make_node(
            "three",
            taints=[{"key": k, "effect": "PreferNoSchedule"} for k in "abc"] + [{"key": "h", "effect": "NoSchedule"}],
        ),
    ]
    plugin, pod, nodes_batch = TaintToleration(), make_pod(tolerations=tolerations), batch(make_table(nodes))
    scores = plugin.score(CycleState(), pod, nodes_batch)
    assert scores.tolist() == raw
    assert plugin.normalize(CycleState(), pod, nodes_batch, scores).tolist() == normalized


def test_score_follows_the_batch_rows() -> None:
    table = make_table([make_node("none"), soft_node("one", "a")])
    scores = TaintToleration().score(CycleState(), make_pod(), NodeBatch(table, np.array([1, 0])))
    assert scores.tolist() == [1, 0]
