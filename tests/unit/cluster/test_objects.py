"""ClusterObjects: PodDisruptionBudgets and namespace labels as watches (list, then events) report them."""

from __future__ import annotations

import msgspec

from kubesched.api.core import Namespace
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.cluster.objects import ClusterObjects


def pdb(namespace: str, name: str, allowed: int = 0) -> PodDisruptionBudget:
    meta = {"name": name, "namespace": namespace}
    return msgspec.convert({"metadata": meta, "status": {"disruptionsAllowed": allowed}}, PodDisruptionBudget)


def ns(name: str, **labels: str) -> Namespace:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Namespace)


def test_pdbs_follow_list_and_events_keyed_by_namespace_and_name() -> None:
    objects = ClusterObjects([pdb("a", "x")])
    assert [(p.metadata.namespace, p.metadata.name) for p in objects.pdbs()] == [("a", "x")]
    objects.upsert_pdb(pdb("b", "x"))  # same name, other namespace: a second budget
    objects.upsert_pdb(pdb("a", "x", allowed=2))  # an update replaces
    assert sorted((p.metadata.namespace, p.status.disruptions_allowed) for p in objects.pdbs()) == [("a", 2), ("b", 0)]
    objects.delete_pdb(pdb("a", "x"))
    objects.delete_pdb(pdb("a", "gone"))  # unknown: nothing happens
    assert [p.metadata.namespace for p in objects.pdbs()] == ["b"]
    objects.replace_pdbs([pdb("c", "y")])  # a relist: exactly these
    assert [p.metadata.namespace for p in objects.pdbs()] == ["c"]


def test_namespace_labels_are_known_only_for_listed_namespaces() -> None:
    objects = ClusterObjects(namespaces=[ns("data", team="data")])
    assert objects.namespace_labels("data") == {"team": "data"}
    assert objects.namespace_labels("other") is None
    objects.upsert_namespace(ns("other"))
    assert objects.namespace_labels("other") == {}
    objects.upsert_namespace(ns("data", team="ml"))
    assert objects.namespace_labels("data") == {"team": "ml"}
    objects.delete_namespace(ns("data"))
    assert objects.namespace_labels("data") is None
    objects.replace_namespaces([ns("new", a="b")])
    assert (objects.namespace_labels("other"), objects.namespace_labels("new")) == (None, {"a": "b"})
