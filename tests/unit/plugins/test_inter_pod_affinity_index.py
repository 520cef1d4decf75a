"""InterPodAffinity's counts from the pod index against a walk over every existing pod, on randomized clusters.

The reference is the walk kube-scheduler makes (filtering.go, scoring.go): for each existing pod, its
required anti-affinity terms against the incoming pod, the incoming pod's required terms against it, and
for scoring the weights of both sides, summed per (topology key, node value). Selectors mix matchLabels,
In, NotIn, Exists and DoesNotExist; terms list namespaces or select them ({} or by labels).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.plugins.helpers.affinity_counts import KeyCounts
from kubesched.plugins.helpers.affinity_terms import AffinityTerm, pod_terms
from kubesched.plugins.inter_pod_affinity import FilterState, InterPodAffinity, InterPodAffinityArgs
from kubesched.testing.builders import batch, make_node, make_pod, make_table
from tests.unit.plugins.test_inter_pod_affinity import FakeCluster

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
KEYS = (ZONE, HOST, "rack")
NAMESPACES = {"ns-a": {"team": "a"}, "ns-b": {"team": "b"}, "ns-c": {"team": "a", "env": "prod"}}
Pairs = Counter[tuple[str, str]]


def selector(rng: random.Random) -> dict[str, Any]:
    choice = rng.random()
    if choice < 0.4:
        return {"matchLabels": {"app": rng.choice("abc")}}
    if choice < 0.5:
        return {}
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
    values = rng.sample("abc", rng.randint(1, 2)) if op in ("In", "NotIn") else []
    expr = {"key": rng.choice(("app", "tier")), "operator": op, "values": values}
    return {"matchExpressions": [expr], **({"matchLabels": {"tier": "x"}} if rng.random() < 0.2 else {})}


def term(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"labelSelector": selector(rng), "topologyKey": rng.choice(KEYS)}
    scope = rng.random()
    if scope < 0.2:
        out["namespaces"] = rng.sample(sorted(NAMESPACES), rng.randint(1, 2))
    elif scope < 0.3:
        out["namespaceSelector"] = {}
    elif scope < 0.4:
        out["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    return out


def random_pod(rng: random.Random, name: str, terms: float) -> PodInfo:
    labels = {k: rng.choice(vs) for k, vs in (("app", "abc"), ("tier", "xy")) if rng.random() < 0.8}
    namespace = rng.choice(sorted(NAMESPACES))
    if rng.random() < 0.3:  # a spec shared by pods of several namespaces, as a template's would be
        state = rng.getstate()
        rng.seed(rng.randrange(3))
        spec = random_affinity(rng, terms)
        rng.setstate(state)
    else:
        spec = random_affinity(rng, terms)
    return make_pod(name, namespace=namespace, labels=labels, **spec)


def random_affinity(rng: random.Random, terms: float) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < terms:
            affinity[kind] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [term(rng) for _ in range(rng.randint(0, 2))],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": rng.randint(1, 100), "podAffinityTerm": term(rng)} for _ in range(rng.randint(0, 2))
                ],
            }
    return {"affinity": affinity} if affinity else {}


def cluster(rng: random.Random) -> NodeTable:
    nodes = []
    for i in range(8):
        labels = {HOST: f"n{i}", ZONE: f"z{i % 3}"}
        if rng.random() < 0.6:
            labels["rack"] = f"r{rng.randrange(2)}"
        nodes.append(make_node(f"n{i}", labels=labels))
    placed = {
        n.metadata.name: [random_pod(rng, f"e{i}-{j}", 0.4) for j in range(rng.randint(0, 5))]
        for i, n in enumerate(nodes)
    }
    return make_table(nodes, placed)


def walk(table: NodeTable, pod: PodInfo, hard_weight: int, skip: str = "") -> tuple[Pairs, Pairs, Pairs, Pairs]:
    """Affinity, anti-affinity, existing anti-affinity counts and scores, walking every existing pod."""
    terms = pod_terms(pod)
    aff, anti, existing, scores = (
        Counter[tuple[str, str]](),
        Counter[tuple[str, str]](),
        Counter[tuple[str, str]](),
        Counter[tuple[str, str]](),
    )

    def ns(name: str) -> Mapping[str, str] | None:
        return NAMESPACES.get(name)

    def bump(into: Pairs, labels: Mapping[str, str], t: AffinityTerm, by: int) -> None:
        if t.topology_key in labels:
            into[(t.topology_key, labels[t.topology_key])] += by

    for row in table.rows().tolist():
        labels = table.node(row).metadata.labels or {}
        for other in table.pods_on(row).values():
            if other.uid == skip:
                continue
            theirs = pod_terms(other)
            for t in theirs.required_anti_affinity:
                if t.matches(pod, ns(pod.namespace)):
                    bump(existing, labels, t, 1)
            if terms.required_affinity and all(t.matches(other, ns(other.namespace)) for t in terms.required_affinity):
                for t in terms.required_affinity:
                    bump(aff, labels, t, 1)
            for t in terms.required_anti_affinity:
                if t.matches(other, ns(other.namespace)):
                    bump(anti, labels, t, 1)
            for w, sign in [(w, 1) for w in terms.preferred_affinity] + [
                (w, -1) for w in terms.preferred_anti_affinity
            ]:
                if w.term.matches(other, ns(other.namespace)):
                    bump(scores, labels, w.term, sign * w.weight)
            for t in theirs.required_affinity if hard_weight else ():
                if t.matches(pod, ns(pod.namespace)):
                    bump(scores, labels, t, hard_weight)
            for w, sign in [(w, 1) for w in theirs.preferred_affinity] + [
                (w, -1) for w in theirs.preferred_anti_affinity
            ]:
                if w.term.matches(pod, ns(pod.namespace)):
                    bump(scores, labels, w.term, sign * w.weight)
    return aff, anti, existing, scores


def pairs(table: NodeTable, counts: KeyCounts) -> Pairs:
    out = Counter[tuple[str, str]]()
    for key, per_value in counts.items():
        for value, code in table.label_codes(key)[1].items():
            if code < len(per_value) and per_value[code]:
                out[(key, value)] = int(per_value[code])
    return out


@pytest.mark.parametrize("seed", range(40))
def test_counts_and_scores_are_those_of_a_walk_over_every_pod(seed: int) -> None:
    rng = random.Random(seed)
    table = cluster(rng)
    hard = rng.choice((0, 1, 5))
    plugin = InterPodAffinity(
        InterPodAffinityArgs(hard_pod_affinity_weight=hard), Handle(cluster=FakeCluster(NAMESPACES))
    )
    for i in range(6):
        pod = random_pod(rng, f"in-{i}", 0.8)
        aff, anti, existing, scores = walk(table, pod, hard)
        state = CycleState()
        result = plugin.pre_filter(state, pod, table)
        s = state.get(plugin.name)
        if isinstance(s, FilterState):
            assert (pairs(table, s.affinity), pairs(table, s.anti_affinity)) == (+aff, +anti)
            assert pairs(table, s.existing_anti_affinity) == +existing
            # Preemption's dry run: a victim removed from the counts, then added back.
            row = rng.choice([r for r in table.rows().tolist() if table.pods_on(r)] or [0])
            for victim in list(table.pods_on(row).values())[:1]:
                copy = CycleState()
                copy[plugin.name] = s.clone()
                plugin.remove_pod(copy, pod, victim, table, row)
                without = walk(table, pod, hard, skip=victim.uid)
                c = copy[plugin.name]
                got = (pairs(table, c.affinity), pairs(table, c.anti_affinity), pairs(table, c.existing_anti_affinity))
                assert got == (+without[0], +without[1], +without[2])
                plugin.add_pod(copy, pod, victim, table, row)
                assert pairs(table, copy[plugin.name].affinity) == +aff
                assert pairs(table, s.affinity) == +aff  # the clone shares no array with the original
        else:
            assert result.status.code.name == "SKIP"
            assert not +existing and not pod_terms(pod).required_affinity and not pod_terms(pod).required_anti_affinity
        status = plugin.pre_score(state, pod, batch(table))
        nodes = batch(table)
        want = np.array(
            [
                sum(n for (k, v), n in scores.items() if (table.node(r).metadata.labels or {}).get(k) == v)
                for r in nodes.rows.tolist()
            ]
        )
        if status.code.name == "SKIP":
            assert not want.any()
        else:
            assert plugin.score(state, pod, nodes).tolist() == want.tolist()
        # The pod is placed, as the scheduler would assume it: the next pod sees it through the index.
        table.add_pod(rng.choice(table.rows().tolist()), pod)


def test_equal_terms_defaulting_to_their_pods_namespaces_are_not_merged_across_namespaces() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}, "topologyKey": ZONE}]
        }
    }
    nodes = [make_node("n1", labels={ZONE: "z1"}), make_node("n2", labels={ZONE: "z2"})]
    existing = {
        "n1": [make_pod("a", namespace="ns-a", affinity=anti)],
        "n2": [make_pod("b", namespace="ns-b", affinity=anti)],
    }
    table = make_table(nodes, existing)
    plugin, state = InterPodAffinity(handle=Handle(cluster=FakeCluster(NAMESPACES))), CycleState()
    plugin.pre_filter(state, make_pod("p", namespace="ns-b"), table)
    assert pairs(table, state[plugin.name].existing_anti_affinity) == Counter({(ZONE, "z2"): 1})
