"""The node table's declared-features column: interned sets kept current as nodes come, change, go and rows grow."""

from __future__ import annotations

import msgspec

from kubesched.api.core import Node
from kubesched.core.nodetable import NodeTable
from kubesched.testing.builders import node_json


def node(name: str, *features: str) -> Node:
    body = node_json(name)
    body["status"]["declaredFeatures"] = list(features)
    return msgspec.convert(body, Node)


def sets_by_row(table: NodeTable) -> dict[str, frozenset[str]]:
    codes, sets = table.declared_features()
    by_code = {code: features for features, code in sets.items()}
    return {table.names[row]: by_code[int(codes[row])] for row in table.rows().tolist()}


def test_rows_follow_adds_updates_removals_and_growth() -> None:
    table = NodeTable(capacity=1)
    table.upsert(node("a", "X"))
    assert sets_by_row(table) == {"a": {"X"}}
    for i in range(5):  # past the capacity: the column grows with the table
        table.upsert(node(f"n{i}", "X", "Y") if i % 2 else node(f"n{i}"))
    table.upsert(node("a"))
    table.remove("n0")
    table.upsert(node("b", "Y", "X"))  # takes n0's row
    assert sets_by_row(table) == {
        "a": set(),
        "n1": {"X", "Y"},
        "n2": set(),
        "n3": {"X", "Y"},
        "n4": set(),
        "b": {"X", "Y"},
    }
    codes, sets = table.declared_features()
    assert len(sets) == 3  # {}, {X}, {X, Y}: equal sets share one code
    assert codes[table.index["b"]] == codes[table.index["n1"]]
