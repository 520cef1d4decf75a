from __future__ import annotations

import pytest

from kubesched.framework.interfaces import CycleState
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_name import NodeName
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

MISMATCH = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match the requested node name",))


@pytest.mark.parametrize(
    ("node_name", "expected"),
    [
        ("", [None, None, None]),
        ("b", [MISMATCH, None, MISMATCH]),
        ("gone", [MISMATCH, MISMATCH, MISMATCH]),
    ],
    ids=["unset", "named", "unknown-node"],
)
def test_filter(node_name: str, expected: list[Status | None]) -> None:
    table = make_table([make_node("a"), make_node("b"), make_node("c")])
    verdicts = NodeName().filter(CycleState(), make_pod(nodeName=node_name), batch(table))
    assert results(verdicts) == expected
