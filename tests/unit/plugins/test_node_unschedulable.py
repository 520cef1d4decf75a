from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.interfaces import CycleState
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_unschedulable import NodeUnschedulable
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

CORDONED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",))
KEY = "node.kubernetes.io/unschedulable"


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], [None, CORDONED]),
        ([{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}], [None, None]),
        ([{"key": KEY, "operator": "Exists"}], [None, None]),
        ([{"operator": "Exists"}], [None, None]),
        ([{"key": KEY, "operator": "Exists", "effect": "NoExecute"}], [None, CORDONED]),
        ([{"key": KEY, "operator": "Equal", "value": "true"}], [None, CORDONED]),
    ],
    ids=["no-toleration", "exact", "any-effect", "tolerate-everything", "wrong-effect", "wrong-value"],
)
def test_filter(tolerations: list[dict[str, Any]], expected: list[Status | None]) -> None:
    table = make_table([make_node("open"), make_node("cordoned", unschedulable=True)])
    pod = make_pod(tolerations=tolerations)
    assert results(NodeUnschedulable().filter(CycleState(), pod, batch(table))) == expected
