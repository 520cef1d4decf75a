"""Static filters run as one cached stage: same verdicts as running them one by one, refreshed when
what they read changes, kept across pod changes."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.core import Node
from kubesched.core.nodetable import table_of
from kubesched.framework.interfaces import CycleState, NodeBatch
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.plugins import in_tree
from kubesched.plugins.required_label import RequiredLabel
from kubesched.testing.builders import make_node, make_pod


def node(name: str, labels: dict[str, str], *, cordoned: bool = False) -> Node:
    return make_node(name, alloc={"pods": "10"}, labels=labels, unschedulable=cordoned)


def pod(uid: str, **spec: Any) -> Any:
    return make_pod(uid, uid=uid, **spec)


def framework() -> Framework:
    registry = in_tree()
    registry.register(RequiredLabel, "test")
    spec = ProfileSpec(plugins=(PluginRef("RequiredLabel"), PluginRef("NodeUnschedulable"), PluginRef("NodeAffinity")))
    return Framework.build(spec, registry)


def outcome(fw: Framework, table: Any, p: Any) -> tuple[list[str], dict[str, str]]:
    out = fw.find_feasible(CycleState(), p, NodeBatch(table, table.rows()))
    names = table.names
    return [names[r] for r in out.feasible.tolist()], {names[r]: s.message for r, s in out.diagnosis.items()}


def test_stage_matches_first_failure_order_and_is_cached() -> None:
    fw = framework()
    table = table_of(
        [node("a", {"custom": "1"}), node("b", {}, cordoned=True), node("c", {"custom": "1"}, cordoned=True)]
    )
    feasible, failed = outcome(fw, table, pod("p1"))
    assert feasible == ["a"]
    assert failed == {"b": "node(s) didn't have label custom", "c": "node(s) were unschedulable"}
    assert len(table.derived) == 1
    outcome(fw, table, pod("p2"))  # same shape: no new entry
    assert len(table.derived) == 1
    outcome(fw, table, pod("p3", nodeSelector={"custom": "1"}))  # another shape
    assert len(table.derived) == 2


def test_cache_follows_node_changes_but_not_pod_changes() -> None:
    fw = framework()
    table = table_of([node("a", {"custom": "1"}), node("b", {})])
    assert outcome(fw, table, pod("p"))[0] == ["a"]
    table.add_pod(0, pod("other"))
    assert len(table.derived) == 1  # usage changes leave static verdicts alone
    table.upsert(node("b", {"custom": "1"}))
    assert table.derived == {}
    assert outcome(fw, table, pod("p"))[0] == ["a", "b"]
    table.upsert(node("b", {"custom": "1"}))  # an update that changes nothing static
    assert len(table.derived) == 1
    table.remove("a")
    assert outcome(fw, table, pod("p"))[0] == ["b"]


def test_subset_of_rows_uses_the_whole_table_verdicts() -> None:
    fw = framework()
    table = table_of([node(f"n{i}", {"custom": "1"} if i % 2 else {}) for i in range(10)])
    rows = np.array([7, 2, 5], dtype=np.intp)
    out = fw.find_feasible(CycleState(), pod("p"), NodeBatch(table, rows))
    assert out.feasible.tolist() == [7, 5]
