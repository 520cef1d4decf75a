"""The node table lists nodes as kube-scheduler's node tree does: zones interleaved."""

from __future__ import annotations

from kubesched.core.nodetable import NodeTable, table_of
from kubesched.core.nodetree import zone_key
from kubesched.testing.builders import make_node

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def names(table: NodeTable) -> list[str]:
    return [table.names[int(r)] for r in table.ordered_rows()]


def test_zone_keys_prefer_the_beta_labels_and_join_region_and_zone() -> None:
    assert zone_key(make_node("a")) == ""
    assert zone_key(make_node("a", labels={ZONE: "z1"})) == ":\x00:z1"
    assert zone_key(make_node("a", labels={ZONE: "z1", REGION: "r"})) == "r:\x00:z1"
    beta = {"failure-domain.beta.kubernetes.io/zone": "old", ZONE: "new"}
    assert zone_key(make_node("a", labels=beta)) == ":\x00:old"


def test_nodes_are_listed_zone_by_zone_in_turn_in_the_order_they_came() -> None:
    nodes = [
        make_node(n, labels={ZONE: z})
        for n, z in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]
    ]
    table = table_of(nodes)
    assert names(table) == ["a1", "b1", "c1", "a2", "c2", "a3"]
    table.upsert(make_node("b2", labels={ZONE: "b"}))
    assert names(table) == ["a1", "b1", "c1", "a2", "b2", "c2", "a3"]
    table.remove("a1")
    table.upsert(make_node("c1", labels={ZONE: "b"}))  # moved: last of its new zone
    assert names(table) == ["a2", "b1", "c2", "a3", "b2", "c1"]
    table.remove("c2")  # zone c is gone; b now comes second
    assert names(table) == ["a2", "b1", "a3", "b2", "c1"]
