"""The pod index against a brute-force count over the table's pods, on randomized clusters.

Every step (a pod added, assumed, confirmed, forgotten, relabelled or deleted; a node added, relabelled or
deleted) is followed by a full comparison: the groups, the inverted indexes and each group's pods per
topology value, both as kept incrementally and as rebuilt by a fresh index.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from kubesched.cluster.cache import ClusterCache
from kubesched.core.nodetable import NodeTable
from kubesched.core.podindex import PodGroup, PodIndex, affinity_key, labels_key
from kubesched.testing.builders import make_node, make_pod_object

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
KEYS = (ZONE, HOST, "rack")


def node(rng: random.Random, name: str) -> Any:
    labels = {HOST: name, ZONE: f"z{rng.randrange(3)}"}
    if rng.random() < 0.5:
        labels["rack"] = f"r{rng.randrange(2)}"
    return make_node(name, labels=labels)


def pod_spec(rng: random.Random) -> dict[str, Any]:
    labels = {k: rng.choice(vs) for k, vs in (("app", "abc"), ("tier", "xy")) if rng.random() < 0.8}
    spec: dict[str, Any] = {"labels": labels, "namespace": rng.choice(("ns-a", "ns-b"))}
    if rng.random() < 0.4:
        term = {"labelSelector": {"matchLabels": {"app": rng.choice("abc")}}, "topologyKey": rng.choice(KEYS)}
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        spec["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return spec


def expected(table: NodeTable) -> tuple[dict[Any, Counter[tuple[str, str]]], dict[Any, Counter[tuple[str, str]]]]:
    """Per group key, pods per (topology key, value), walking every pod."""
    by_labels: dict[Any, Counter[tuple[str, str]]] = {}
    by_terms: dict[Any, Counter[tuple[str, str]]] = {}
    for row in table.rows().tolist():
        node_labels = table.node(row).metadata.labels or {}
        for p in table.pods_on(row).values():
            keys = [(by_labels, labels_key(p))] + ([(by_terms, affinity_key(p))] if p.has_pod_affinity else [])
            for into, key in keys:
                counts = into.setdefault(key, Counter())
                counts[("#pods", "")] += 1
                for k in KEYS:
                    if k in node_labels:
                        counts[(k, node_labels[k])] += 1
    return by_labels, by_terms


def observed(table: NodeTable, index: PodIndex) -> tuple[dict[Any, Counter[tuple[str, str]]], ...]:
    index.activate()
    by_labels = {(ns, key): g for key, s in index.sets.items() for ns, g in s.namespaces.items()}
    out: list[dict[Any, Counter[tuple[str, str]]]] = []
    for groups in (by_labels, index.by_terms):
        out.append({key: counted(table, group) for key, group in groups.items()})
    # A label set's whole counts are its namespaces' together.
    for key, label_set in index.sets.items():
        assert counted(table, label_set.all) == sum(
            map(lambda g: counted(table, g), label_set.namespaces.values()), Counter()
        )
        assert label_set.labels.items() == dict(key).items()
    # The inverted indexes hold exactly the label sets carrying each pair, and those of each namespace.
    pairs: dict[tuple[str, str], set[Any]] = {}
    for key in index.sets:
        for pair in key:
            pairs.setdefault(pair, set()).add(key)
    assert {p: set(gs) for p, gs in index.by_pair.items()} == pairs
    assert {ns: set(gs) for ns, gs in index.by_namespace.items()} == {
        ns: {k for k, s in index.sets.items() if ns in s.namespaces} for s in index.sets.values() for ns in s.namespaces
    }
    return tuple(out)


def counted(table: NodeTable, group: PodGroup) -> Counter[tuple[str, str]]:
    counts = Counter({("#pods", ""): group.size})
    assert group.size == sum(group.rows.values()) > 0
    for k in KEYS:
        per_value = group.per_value(table, k)
        vocab = table.label_codes(k)[1]
        codes, pods = group.sparse(table, k)  # the same counts as (code, pods) pairs
        assert np.bincount(codes, pods, minlength=len(vocab)).astype(np.int64).tolist() == per_value.tolist()
        counts.update({(k, v): int(per_value[c]) for v, c in vocab.items() if per_value[c]})
    return counts


def check(cache: ClusterCache) -> None:
    want = expected(cache.table)
    assert observed(cache.table, cache.table.pod_index) == want
    assert observed(cache.table, PodIndex(cache.table)) == want  # rebuilt from scratch: the same


@pytest.mark.parametrize("seed", range(12))
def test_the_index_follows_every_change_of_pods_and_nodes(seed: int) -> None:
    rng = random.Random(seed)
    cache = ClusterCache()
    names = [f"n{i}" for i in range(6)]
    for name in names:
        cache.upsert_node(node(rng, name))
    live: dict[str, dict[str, Any]] = {}  # uid → the pod's spec keywords and node
    if seed % 2:
        cache.table.pod_index.activate()  # indexing from the start, or from the first read (below)
    serial = 0
    for step in range(120):
        op = rng.random()
        if op < 0.35 or not live:
            serial += 1
            name, where = f"p{serial}", rng.choice(names)
            kw = pod_spec(rng)
            live[f"uid-{name}"] = {"name": name, "node": where, **kw}
            obj = make_pod_object(name, node_name=where, **kw)
            if rng.random() < 0.5:
                cache.assume(cache.compile(obj), where)
            else:
                cache.upsert_pod(obj)
        elif op < 0.5:
            uid = rng.choice(sorted(live))
            p = live[uid]
            if cache.is_assumed(uid) and rng.random() < 0.5:
                cache.forget(uid)
                del live[uid]
            else:  # confirmed by the watch, or relabelled (a new label set: the pod moves between groups)
                if rng.random() < 0.5:
                    p["labels"] = {"app": rng.choice("abc")}
                rest = {k: v for k, v in p.items() if k not in ("name", "node")}
                cache.upsert_pod(make_pod_object(p["name"], node_name=p["node"], **rest))
        elif op < 0.7:
            uid = rng.choice(sorted(live))
            cache.delete_pod(uid)
            del live[uid]
        elif op < 0.8:
            cache.upsert_node(node(rng, rng.choice(names)))  # its zone and rack may change
        elif op < 0.88:
            name = rng.choice(names)
            cache.delete_node(name)  # its pods leave the table (kept as orphans until it returns)
            if rng.random() < 0.7:
                cache.upsert_node(node(rng, name))
        else:
            cache.upsert_node(node(rng, rng.choice(names)))
        if step % 3 == 0 or seed % 2:
            check(cache)
    check(cache)


def test_an_index_read_first_late_counts_the_pods_already_on_the_table() -> None:
    cache = ClusterCache()
    cache.upsert_node(make_node("n1", labels={ZONE: "z1"}))
    cache.upsert_pod(make_pod_object("a", node_name="n1", labels={"app": "a"}))
    index = cache.table.pod_index
    [label_set] = index.activate().sets.values()
    group = label_set.namespaces["default"]
    assert group.size == 1
    assert group.per_value(cache.table, ZONE).tolist() == [1]
    cache.upsert_pod(make_pod_object("b", node_name="n1", labels={"app": "a"}))
    assert group.per_value(cache.table, ZONE).tolist() == [2]
    cache.delete_pod("uid-a")
    cache.delete_pod("uid-b")
    assert not index.sets
    assert not index.by_pair
    assert not index.by_namespace
