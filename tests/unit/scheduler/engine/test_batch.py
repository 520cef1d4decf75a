"""Opportunistic batching: consecutive pods of one signature reuse a full cycle's scores."""

from __future__ import annotations

import random
from typing import ClassVar

import numpy as np

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import parse
from kubesched.config.v1 import Extender
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interfaces import CycleState, FilterPlugin, Handle, NodeBatch
from kubesched.framework.status import Verdicts
from kubesched.scheduler.engine.batch import (
    FLUSH_EXPIRED,
    FLUSH_INCOMPATIBLE,
    FLUSH_NODE_MISSING,
    FLUSH_NOT_BATCHABLE,
    FLUSH_POD_SKIPPED,
    FLUSH_RESCORE,
    HINT_USED,
    MAX_BATCH_AGE,
)
from kubesched.scheduler.engine.cycle import Cycle
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.profiles.manager import build, build_default, load_registry
from kubesched.scheduler.remote.extenders import ExtenderSet
from kubesched.testing.builders import make_node, make_pod

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def cache_of(nodes: list[Node]) -> ClusterCache:
    cache = ClusterCache()
    cache.replace_nodes(nodes)
    cache.synced.set()
    return cache


def default_profile() -> Profile:
    return build_default(Handle).profiles["default-scheduler"]


def varied_nodes(n: int, taint_every: int = 0) -> list[Node]:
    """Nodes of different sizes (so scores differ), some with PreferNoSchedule taints."""
    nodes = []
    for i in range(n):
        taints = (
            [{"key": f"t{i % 3}", "value": "x", "effect": "PreferNoSchedule"}]
            if taint_every and i % taint_every == 0
            else []
        )
        nodes.append(
            make_node(
                f"n{i}",
                alloc={"cpu": f"{2 + i % 7}", "memory": f"{4 + (i * 3) % 11}Gi", "pods": "110"},
                taints=taints,
                labels={"kubernetes.io/hostname": f"n{i}"},
            )
        )
    return nodes


def best_by_full_cycle(profile: Profile, cache: ClusterCache, pod: PodInfo) -> set[str]:
    """The nodes a full, unbatched evaluation of every node ranks highest for ``pod`` right now."""
    fw, table = profile.framework, cache.table
    state = CycleState()
    status = fw.run_pre_filter(state, pod, table).status
    assert status.ok
    feasible = fw.run_filter(state, pod, NodeBatch(table, table.rows()), Diagnosis())
    nodes = NodeBatch(table, feasible)
    totals, _ = fw.prioritize(state, pod, nodes)
    return {table.names[int(r)] for r in feasible[totals == totals.max()]}


async def test_pods_of_one_signature_take_the_best_kept_node_without_filtering_all_nodes() -> None:
    # Below 100 nodes every node is a candidate, so a full cycle's ranking is the reference.
    cache = cache_of(varied_nodes(60, taint_every=4))
    clock = Clock()
    cycle = Cycle(cache, rng=random.Random(3), now=clock)
    profile = default_profile()
    for i in range(40):
        pod = make_pod(f"p{i}", requests={"cpu": "300m", "memory": "512Mi"})
        best = best_by_full_cycle(profile, cache, pod)
        start = cycle.next_start
        out = await cycle.run(profile, pod)
        assert out.node in best, f"pod {i}: {out.node} not among the best {sorted(best)}"
        if i:
            assert out.evaluated == 1 and cycle.next_start == start  # the hint alone was filtered
    batch = cycle.batch(profile)
    assert batch is not None and batch.attempts[HINT_USED] == 39


async def test_one_pod_per_node_reuses_the_ranking_without_rescoring() -> None:
    nodes = [make_node(f"n{i}", alloc={"cpu": "4", "memory": f"{4 + i}Gi", "pods": "110"}) for i in range(30)]
    cache = cache_of(nodes)
    cycle = Cycle(cache, rng=random.Random(1), now=Clock())
    profile = default_profile()
    placed = []
    for i in range(30):
        pod = make_pod(f"p{i}", requests={"cpu": "3500m"})  # fills any node: the last chosen one rejects the next
        best = best_by_full_cycle(profile, cache, pod)
        out = await cycle.run(profile, pod)
        assert out.node in best
        placed.append(out.node)
    assert len(set(placed)) == 30
    out = await cycle.run(profile, make_pod("extra", requests={"cpu": "3500m"}))
    assert out.node is None and out.message.startswith("0/30 nodes are available: 30 Insufficient cpu.")


async def test_a_different_signature_an_expired_batch_and_a_gap_each_start_over() -> None:
    cache = cache_of(varied_nodes(20))
    clock = Clock()
    cycle = Cycle(cache, rng=random.Random(2), now=clock)
    profile = default_profile()
    batch = cycle.batch(profile)
    assert batch is not None
    await cycle.run(profile, make_pod("a0", requests={"cpu": "100m"}))
    await cycle.run(profile, make_pod("a1", requests={"cpu": "100m"}))
    assert batch.attempts[HINT_USED] == 1
    out = await cycle.run(profile, make_pod("b0", requests={"cpu": "200m"}))
    assert out.node is not None and batch.flushes[FLUSH_INCOMPATIBLE] == 1 and out.evaluated == 20
    clock.t += MAX_BATCH_AGE + 0.01
    out = await cycle.run(profile, make_pod("b1", requests={"cpu": "200m"}))
    assert batch.flushes[FLUSH_EXPIRED] == 1 and out.evaluated == 20
    failed = await cycle.run(profile, make_pod("huge", requests={"cpu": "500"}))
    assert failed.node is None and batch.flushes[FLUSH_INCOMPATIBLE] == 2
    out = await cycle.run(profile, make_pod("b2", requests={"cpu": "200m"}))
    out = await cycle.run(profile, make_pod("b3", requests={"cpu": "200m"}))
    assert out.evaluated == 1 and batch.attempts[HINT_USED] == 2


async def test_a_pod_of_another_profile_between_two_pods_starts_over() -> None:
    config = parse({**HEAD, "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]})
    registry, _ = load_registry((), lambda: [])
    built = build(config, registry, Handle)
    a, b = built.profiles["a"], built.profiles["b"]
    cycle = Cycle(cache_of(varied_nodes(20)), rng=random.Random(4), now=Clock())
    await cycle.run(a, make_pod("a0", requests={"cpu": "100m"}))
    await cycle.run(b, make_pod("b0", requests={"cpu": "100m"}))
    out = await cycle.run(a, make_pod("a1", requests={"cpu": "100m"}))
    batch = cycle.batch(a)
    assert batch is not None and batch.flushes[FLUSH_POD_SKIPPED] == 1 and out.evaluated == 20


async def test_pods_with_pod_affinity_or_spread_constraints_are_never_batched() -> None:
    cache = cache_of(varied_nodes(20))
    cycle = Cycle(cache, rng=random.Random(2), now=Clock())
    profile = default_profile()
    affinity = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"a": "b"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {},
        }
    ]
    for i in range(3):
        assert profile.framework.sign(make_pod(f"x{i}", requests={"cpu": "1"}, affinity=affinity)) is None
        out = await cycle.run(profile, make_pod(f"a{i}", requests={"cpu": "100m"}, affinity=affinity))
        assert out.node is not None and out.evaluated == 20
        out = await cycle.run(profile, make_pod(f"s{i}", requests={"cpu": "100m"}, topologySpreadConstraints=spread))
        assert out.node is not None and out.evaluated == 20
    batch = cycle.batch(profile)
    assert batch is not None and batch.attempts[HINT_USED] == 0 and batch.flushes[FLUSH_NOT_BATCHABLE] >= 5


class Unsigned(FilterPlugin):
    """A filter that cannot sign pods: the profile must not batch."""

    name: ClassVar[str] = "Unsigned"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        return Verdicts.all_pass(len(nodes))


async def test_a_plugin_that_cannot_sign_or_an_extender_turns_batching_off() -> None:
    config = parse(
        {**HEAD, "profiles": [{"schedulerName": "s", "plugins": {"multiPoint": {"enabled": [{"name": "Unsigned"}]}}}]}
    )
    registry, _ = load_registry((), lambda: [])
    registry.register(Unsigned)
    built = build(config, registry, Handle)
    profile = built.profiles["s"]
    assert profile.framework.signers is None
    cycle = Cycle(cache_of(varied_nodes(5)), now=Clock())
    assert cycle.batch(profile) is None
    with_extender = Cycle(
        cache_of(varied_nodes(5)), extenders=ExtenderSet([Extender("http://127.0.0.1:1", filter_verb="f")])
    )
    assert with_extender.batch(default_profile()) is None


async def test_a_nominated_pod_is_tried_on_its_nominated_node_not_the_hint() -> None:
    cache = cache_of(varied_nodes(20))
    cycle = Cycle(cache, rng=random.Random(5), now=Clock())
    profile = default_profile()
    first = await cycle.run(profile, make_pod("a0", requests={"cpu": "100m"}))
    nominated = make_pod("a1", requests={"cpu": "100m"})
    target = "n7" if first.node != "n7" else "n8"
    nominated.pod.status.nominated_node_name = target
    out = await cycle.run(profile, nominated)
    assert out.node == target


def test_the_plugin_managers_extension_point_lists_drive_the_filter_stages() -> None:
    # TaintToleration disabled at filter only: it must neither filter nor be asked to sign for filtering.
    config = parse(
        {
            **HEAD,
            "profiles": [
                {"schedulerName": "s", "plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}},
            ],
        }
    )
    registry, _ = load_registry((), lambda: [])
    profile = build(config, registry, Handle).profiles["s"]
    fw = profile.framework
    assert all(p.name != "TaintToleration" for p in fw.filter)
    tainted = cache_of([make_node("t", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])])
    state, pod = CycleState(), make_pod("p")
    status = fw.run_pre_filter(state, pod, tainted.table).status
    assert status.ok
    feasible = fw.run_filter(state, pod, NodeBatch(tainted.table, np.array([0], dtype=np.intp)), Diagnosis())
    assert len(feasible) == 1


def test_the_scheduler_passes_the_feature_gate_and_reports_batching_in_its_metrics() -> None:
    off = Scheduler(ClusterCache(), MemoryCluster([], []), build_default, batching=False)
    assert off.cycle.batch(off.built.profiles["default-scheduler"]) is None
    on = Scheduler(ClusterCache(), MemoryCluster([], []), build_default)
    batch = on.cycle.batch(on.built.profiles["default-scheduler"])
    assert batch is not None
    batch.attempts[HINT_USED] += 3
    text = on.metrics.render().decode()
    assert 'scheduler_batch_attempts_total{profile="default-scheduler",result="hint_used"} 3.0' in text


async def test_a_node_removed_during_a_batch_starts_over_and_the_gone_node_is_never_hinted() -> None:
    cache = cache_of(varied_nodes(20))
    cycle = Cycle(cache, rng=random.Random(6), now=Clock())
    profile = default_profile()
    first = await cycle.run(profile, make_pod("a0", requests={"cpu": "100m"}))
    batch = cycle.batch(profile)
    assert batch is not None and first.node is not None
    cache.delete_node(first.node)
    out = await cycle.run(profile, make_pod("a1", requests={"cpu": "100m"}))
    assert out.node is not None and out.node != first.node and out.evaluated == 19
    assert batch.flushes[FLUSH_NODE_MISSING] == 1
    out = await cycle.run(profile, make_pod("a2", requests={"cpu": "100m"}))
    assert out.evaluated == 1 and out.node != first.node


async def test_a_plugin_that_starts_scoring_midway_makes_the_batch_start_over() -> None:
    # A pod with preferred anti-affinity against app=web lands: InterPodAffinity, skipped in the full cycle,
    # scores the next web pod. The kept scores lack it, so they are dropped, not patched.
    cache = cache_of(varied_nodes(20))
    cycle = Cycle(cache, rng=random.Random(8), now=Clock())
    profile = default_profile()

    def web(name: str) -> PodInfo:
        info = make_pod(name, requests={"cpu": "100m"})
        info.labels["app"] = "web"
        return info

    assert (await cycle.run(profile, web("w0"))).node is not None
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": term}]
        }
    }
    cache.table.add_pod(cache.table.index["n3"], make_pod("loner", requests={"cpu": "100m"}, affinity=anti))
    out = await cycle.run(profile, web("w1"))
    batch = cycle.batch(profile)
    assert batch is not None and batch.flushes[FLUSH_RESCORE] == 1 and out.evaluated == 20
