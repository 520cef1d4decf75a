"""The node table keeps the pods with pod (anti-)affinity as pods and nodes come and go."""

from __future__ import annotations

from typing import Any

from kubesched.core.nodetable import table_of
from kubesched.testing.builders import make_node, make_pod

TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}


def pod(uid: str, affinity: dict[str, Any] | None = None) -> Any:
    return make_pod(uid, uid=uid, **({"affinity": affinity} if affinity else {}))


def test_index_follows_pods_and_nodes() -> None:
    table = table_of([make_node(n) for n in ("a", "b")])
    table.add_pod(0, pod("plain"))
    table.add_pod(0, pod("aff", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}))
    table.add_pod(1, pod("anti", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}))
    table.add_pod(1, pod("nodeaff", {"nodeAffinity": {}}))
    assert sorted((row, p.uid) for row, p in table.pods_with_affinity()) == [(0, "aff"), (1, "anti")]
    table.remove_pod(0, "aff")
    assert [p.uid for _, p in table.pods_with_affinity()] == ["anti"]
    table.remove("b")
    assert table.pods_with_affinity() == []
