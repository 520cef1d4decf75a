from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from kubesched.api.core import Node
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import ClusterAPIError, CycleState, Handle
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SUCCESS, Code, Status
from kubesched.plugins import default_profile_plugins, in_tree
from kubesched.plugins.default_preemption import DefaultPreemption, Preemption, VictimsMap
from kubesched.plugins.helpers.preemption_candidates import Candidate, pick_one, split_by_pdb
from kubesched.scheduler.engine.nominator import Nominator
from kubesched.testing.builders import batch, make_node, make_pod, make_table
from kubesched.versions import parse_release

HOST = "kubernetes.io/hostname"
_uids = itertools.count()


@dataclass
class FakeCluster:
    """Records evictions and nominations; serves PDBs and namespace labels."""

    budgets: Sequence[PodDisruptionBudget] = ()
    fail_evict: str = ""
    evicted: list[tuple[str, str, str]] = field(default_factory=list)
    nominated: list[tuple[str, str]] = field(default_factory=list)
    plugin: DefaultPreemption | None = None
    gated: list[Status] = field(default_factory=list)

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        raise AssertionError("not used")

    async def evict(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> None:
        if self.plugin is not None:
            self.gated.append(self.plugin.pre_enqueue(preemptor))
        if self.fail_evict:
            raise ClusterAPIError(self.fail_evict)
        self.evicted.append((victim.name, preemptor.name, node_name))

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated.append((pod.name, node_name))

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self.budgets

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return {}


def found(node: str, victims: int) -> Status:
    """DefaultPreemption's success as kube-scheduler v1.37 words it (v1.35's says nothing)."""
    return Status(
        Code.SUCCESS, (f"preemption: found a potential placement for pod on node {node}, preempting {victims} victims",)
    )


def pod(
    name: str,
    priority: int = 0,
    cpu: str | None = "1",
    labels: dict[str, str] | None = None,
    start: str | None = None,
    status: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    **spec: Any,
) -> PodInfo:
    pod_status = {"startTime": start, **(status or {})} if start or status else {}
    requests = {"cpu": cpu} if cpu is not None else None
    return make_pod(
        name, labels=labels or {}, requests=requests, priority=priority, meta=meta, status=pod_status, **spec
    )


def node(name: str, cpu: str = "4", **kwargs: Any) -> Node:
    return make_node(name, alloc={"cpu": cpu, "memory": "8Gi", "pods": "110"}, labels={HOST: name}, **kwargs)


def pdb(allowed: int, labels: dict[str, str], disrupted: dict[str, str] | None = None) -> PodDisruptionBudget:
    doc = {
        "metadata": {"name": f"pdb-{next(_uids)}", "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted},
    }
    return msgspec.convert(doc, PodDisruptionBudget)


@dataclass
class Setup:
    framework: Framework
    plugin: DefaultPreemption
    table: NodeTable
    cluster: FakeCluster

    def preempt(self, incoming: PodInfo) -> tuple[str | None, Status, CycleState]:
        state = CycleState()
        outcome = self.framework.find_feasible(state, incoming, batch(self.table))
        assert not len(outcome.feasible)
        nominated, status = self.plugin.post_filter(state, incoming, self.table, outcome.diagnosis)
        return nominated, status, state

    def pods(self) -> dict[str, list[str]]:
        return {self.table.names[r]: sorted(p.name for p in self.table.pods_on(r).values()) for r in self.table.rows()}


def setup(
    nodes: Sequence[Node],
    existing: Mapping[str, Sequence[PodInfo]],
    budgets: Sequence[PodDisruptionBudget] = (),
    args: Mapping[str, Any] | None = None,
    without_framework: bool = False,
    **offered: Any,
) -> Setup:
    cluster = FakeCluster(budgets)
    handle = Handle(cluster=cluster, **offered)
    spec = ProfileSpec(plugins=default_profile_plugins(), plugin_args={"DefaultPreemption": args} if args else {})
    framework = Framework.build(spec, in_tree(), handle)
    if not without_framework:
        handle.framework = framework
    plugin = next(p for p in framework.post_filter if isinstance(p, DefaultPreemption))
    plugin.random_offset = lambda n: 0
    plugin.now_ns = lambda: 2_000_000_000 * 10**9
    cluster.plugin = plugin
    return Setup(framework, plugin, make_table(nodes, existing), cluster)


def chosen(state: CycleState) -> tuple[str, list[str]]:
    choice = state["DefaultPreemption"]
    assert isinstance(choice, Preemption)
    return choice.node, [v.name for v in choice.victims]


def test_the_fewest_victims_are_taken_and_the_table_is_restored() -> None:
    s = setup([node("n1")], {"n1": [pod("a", 1, "2"), pod("b", 2, "2")]})
    before = s.pods()
    nominated, status, state = s.preempt(pod("p", 10, "2"))
    # b (more important) is reprieved first and fits with p; a must go.
    assert (nominated, status) == ("n1", found("n1", 1))
    assert chosen(state) == ("n1", ["a"])
    assert s.pods() == before


def test_a_preemptions_success_is_silent_in_v1_35() -> None:
    s = setup([node("n1")], {"n1": [pod("a", 1, "2"), pod("b", 2, "2")]}, release=parse_release("1.35"))
    nominated, status, _ = s.preempt(pod("p", 10, "2"))
    assert (nominated, status) == ("n1", SUCCESS)


def test_pdb_violating_pods_are_reprieved_first() -> None:
    """p3 (prio 2) is most important, then p1 (started first), p2; the PDB allows one of p1, p2 to go."""
    existing = {
        "n1": [
            pod("p1", 1, "1", {"app": "x"}, start="2024-01-01T00:00:00Z"),
            pod("p2", 1, "1", {"app": "x"}, start="2024-06-01T00:00:00Z"),
            pod("p3", 2, "2"),
        ]
    }
    with_pdb = setup([node("n1")], existing, [pdb(1, {"app": "x"})])
    assert chosen(with_pdb.preempt(pod("p", 10, "2"))[2]) == ("n1", ["p3"])
    without = setup([node("n1")], existing)
    assert chosen(without.preempt(pod("p", 10, "2"))[2]) == ("n1", ["p1", "p2"])


@pytest.mark.parametrize(
    ("pods", "budgets", "violating", "non_violating"),
    [
        (["a", "b", "c"], [pdb(1, {"app": "x"})], ["b", "c"], ["a"]),
        (["a", "b"], [pdb(0, {"app": "x"}, disrupted={"a": "2024-01-01T00:00:00Z"})], ["b"], ["a"]),
        (["a", "u"], [pdb(0, {"app": "x"})], ["a"], ["u"]),
        (["a"], [pdb(0, {})], [], ["a"]),
    ],
    ids=["budget-of-one", "already-disrupted", "unlabelled-never-violates", "empty-selector-matches-nothing"],
)
def test_split_by_pdb(
    pods: list[str], budgets: list[PodDisruptionBudget], violating: list[str], non_violating: list[str]
) -> None:
    infos = [pod(n, labels=None if n == "u" else {"app": "x"}) for n in pods]
    got = split_by_pdb(infos, budgets)
    assert ([p.name for p in got[0]], [p.name for p in got[1]]) == (violating, non_violating)


def victims(*priorities: int, start: str = "2024-01-01T00:00:00Z") -> tuple[PodInfo, ...]:
    return tuple(pod(f"v{next(_uids)}", prio, start=start) for prio in priorities)


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        ([Candidate("n1", victims(1), 1), Candidate("n2", victims(5), 0)], "n2"),
        ([Candidate("n1", victims(5), 0), Candidate("n2", victims(3, 3), 0)], "n2"),
        ([Candidate("n1", victims(3, 3), 0), Candidate("n2", victims(3, 1), 0)], "n2"),
        # Equal sums of (priority + 2^31): 3 + 2^31 == 3 + (−2^31) + 2^32; then fewer victims win.
        ([Candidate("n1", victims(3, -(2**31)), 0), Candidate("n2", victims(3), 0)], "n2"),
        (
            [
                Candidate("n1", victims(3, start="2024-01-01T00:00:00Z"), 0),
                Candidate("n2", victims(3, start="2025-01-01T00:00:00Z"), 0),
            ],
            "n2",
        ),
        ([Candidate("n1", victims(3), 0), Candidate("n2", victims(3), 0)], "n1"),
    ],
    ids=[
        "fewest-pdb-violations",
        "lowest-top-priority",
        "smallest-priority-sum",
        "fewest-victims",
        "latest-start",
        "first-on-full-tie",
    ],
)
def test_pick_one(candidates: list[Candidate], expected: str) -> None:
    assert pick_one(candidates, now_ns=0).node == expected


def test_the_candidate_choice_runs_over_the_dry_run() -> None:
    """n1's victim has priority 5, n2's priority 3: n2 is chosen although n1 comes first."""
    s = setup([node("n1"), node("n2")], {"n1": [pod("a", 5, "4")], "n2": [pod("b", 3, "4")]})
    nominated, status, state = s.preempt(pod("p", 10, "2"))
    assert (nominated, status, chosen(state)) == ("n2", found("n2", 1), ("n2", ["b"]))


def test_the_dry_run_updates_prefilter_state_of_affinity_plugins() -> None:
    """Only the anti-affinity to the low-priority web pod keeps p off n1; preempting it makes room."""
    web = pod("web", 1, "1", {"app": "web"})
    high = pod("db", 100, "4", {"app": "db"})
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}
            ]
        }
    }
    s = setup([node("n1"), node("n2")], {"n1": [web], "n2": [high]})
    nominated, status, state = s.preempt(pod("p", 10, "1", affinity=anti))
    assert (nominated, status, chosen(state)) == ("n1", found("n1", 1), ("n1", ["web"]))


NEVER = "preemption: not eligible due to preemptionPolicy=Never."


@pytest.mark.parametrize(
    ("nodes", "existing", "incoming", "nominated", "expected"),
    [
        ([node("n1")], {"n1": [pod("a", 1, "4")]}, pod("p", 10, "2", preemptionPolicy="Never"), None, NEVER),
        (
            [node("n1"), node("n2"), node("n3")],
            {n: [pod(f"{n}-hi", 100, "4")] for n in ("n1", "n2", "n3")},
            pod("p", 10, "2"),
            "",
            "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
        ),
        (
            [node("n1"), node("n2", taints=[{"key": "k", "effect": "NoSchedule"}]), node("small", "1")],
            {"n1": [pod("hi", 100, "3"), pod("lo", 1, "1")]},
            pod("p", 10, "2"),
            "",
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
        ),
        (
            [node("n1", taints=[{"key": "k", "effect": "NoSchedule"}])],
            {},
            pod("p", 10, "2"),
            "",
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        (
            [node("n1")],
            {
                "n1": [
                    pod(
                        "going",
                        1,
                        "4",
                        meta={"deletionTimestamp": "2026-01-01T00:00:00Z"},
                        status={
                            "conditions": [
                                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
                            ]
                        },
                    )
                ]
            },
            pod("p", 10, "2", status={"nominatedNodeName": "n1"}),
            None,
            "preemption: not eligible due to a terminating pod on the nominated node.",
        ),
    ],
    ids=["policy-never", "no-victims", "still-failing-and-not-helpful", "nothing-unschedulable", "terminating-victim"],
)
def test_failure_messages(
    nodes: list[Node], existing: dict[str, list[PodInfo]], incoming: PodInfo, nominated: str | None, expected: str
) -> None:
    s = setup(nodes, existing)
    before = s.pods()
    got_nominated, status, state = s.preempt(incoming)
    assert (got_nominated, status) == (nominated, Status(Code.UNSCHEDULABLE, (expected,)))
    assert "DefaultPreemption" not in state
    assert s.pods() == before


def test_candidates_stop_once_enough_are_found() -> None:
    """minCandidateNodesAbsolute 1 with a non-violating candidate: the dry run stops at the first node."""
    nodes = [node(f"n{i}") for i in range(3)]
    existing = {f"n{i}": [pod(f"v{i}", 1, "4")] for i in range(3)}
    s = setup(nodes, existing, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1})
    s.plugin.random_offset = lambda n: 2
    assert chosen(s.preempt(pod("p", 10, "2"))[2]) == ("n2", ["v2"])
    assert s.plugin.num_candidates(1000) == 1
    assert setup(nodes, existing).plugin.num_candidates(5000) == 500


@dataclass
class Extenders:
    keep: Sequence[str]
    seen: list[VictimsMap] = field(default_factory=list)

    def __call__(self, pod: PodInfo, victims: VictimsMap) -> VictimsMap:
        self.seen.append(victims)
        return {n: v for n, v in victims.items() if n in self.keep}


def test_extenders_trim_the_candidates() -> None:
    existing = {"n1": [pod("a", 1, "4")], "n2": [pod("b", 5, "4")]}
    extenders = Extenders(keep=["n2"])
    s = setup([node("n1"), node("n2")], existing, preempt_extenders=extenders)
    nominated, status, state = s.preempt(pod("p", 10, "2"))
    assert {n: ([p.name for p in v], k) for n, (v, k) in extenders.seen[0].items()} == {
        "n1": (["a"], 0),
        "n2": (["b"], 0),
    }
    assert (nominated, status, chosen(state)) == ("n2", found("n2", 1), ("n2", ["b"]))


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        (Extenders(keep=[]), Status(Code.UNSCHEDULABLE, ("preemption: no candidate node for preemption",))),
        (
            lambda pod, victims: {"n1": ([], 0)},
            Status(Code.ERROR, ('preemption: expected at least one victim pod on node "n1"',)),
        ),
    ],
    ids=["all-removed", "no-victims-returned"],
)
def test_extenders_failures(hook: Any, expected: Status) -> None:
    s = setup([node("n1")], {"n1": [pod("a", 1, "4")]}, preempt_extenders=hook)
    nominated, status, state = s.preempt(pod("p", 10, "2"))
    assert (nominated, status, "DefaultPreemption" in state) == (None, expected, False)


def test_without_the_framework_service_it_is_an_error() -> None:
    s = setup([node("n1")], {"n1": [pod("a", 1, "4")]}, without_framework=True)
    _, status, _ = s.preempt(pod("p", 10, "2"))
    assert status.code == Code.ERROR
    assert status.message.startswith("preemption: no framework to dry-run preemption with")


async def test_evict_preempts_the_victims_and_leaves_the_nomination_to_the_report() -> None:
    s = setup([node("n1")], {"n1": [pod("a", 1, "2"), pod("b", 2, "3")]})
    incoming = pod("p", 10, "3")
    _, _, state = s.preempt(incoming)
    assert await s.plugin.evict(state, incoming) == SUCCESS
    assert sorted(s.cluster.evicted) == [("a", "p", "n1"), ("b", "p", "n1")]
    assert s.cluster.nominated == []  # written once, by the scheduler's failure report
    # While evicting, PreEnqueue holds the preemptor back; afterwards it lets it through.
    waiting = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for the preemption for this pod to be finished",))
    assert s.cluster.gated == [waiting, waiting]
    assert s.plugin.pre_enqueue(incoming) == SUCCESS


async def test_a_victim_already_terminating_is_chosen_but_not_preempted_again() -> None:
    """As kube-scheduler v1.35 (prepareCandidate): its graceful deletion has started, no API call is sent (no
    DisruptionTarget condition, no second DELETE, no Preempted event). Found by the differential test."""
    leaving = pod("a", 1, "2", meta={"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x/y"]})
    s = setup([node("n1")], {"n1": [leaving, pod("b", 2, "3")]})
    incoming = pod("p", 10, "3")
    _, _, state = s.preempt(incoming)
    assert chosen(state) == ("n1", ["b", "a"])  # still counted among the victims
    assert await s.plugin.evict(state, incoming) == SUCCESS
    assert s.cluster.evicted == [("b", "p", "n1")]


def test_nominated_pods_at_least_as_important_keep_their_room_in_the_dry_run() -> None:
    # n1: a low-priority victim (1 cpu of 2); "high" is nominated there and needs 1 cpu. Evicting the victim
    # frees 2 cpu, but "high" takes one of them: p (2 cpu) cannot fit, so n1 is no candidate.
    nominator = Nominator()
    s = setup([node("n1", cpu="2")], {"n1": [pod("victim", 0, "1")]}, nominator=nominator)
    nominator.add(pod("high", 100, "1"), "n1")
    nominated, status, _ = s.preempt(pod("p", 50, "2"))
    assert not nominated and not status.ok and "Insufficient cpu" in status.message
    nominator.remove("uid-high")
    nominated, status, state = s.preempt(pod("p", 50, "2"))
    assert (nominated, status) == ("n1", found("n1", 1)) and chosen(state) == ("n1", ["victim"])


async def test_preempting_clears_the_nominations_of_less_important_pods_on_the_node() -> None:
    nominator = Nominator()
    s = setup([node("n1")], {"n1": [pod("a", 1, "4")]}, nominator=nominator)
    nominator.add(pod("low", 5, "1"), "n1")
    nominator.add(pod("peer", 20, "1"), "n1")
    incoming = pod("p", 10, "3")
    _, _, state = s.preempt(incoming)
    assert await s.plugin.evict(state, incoming) == SUCCESS
    assert nominator.node_of("uid-low") is None and nominator.node_of("uid-peer") == "n1"
    assert s.cluster.nominated == [("low", "")]


async def test_evict_failures_are_error_statuses() -> None:
    s = setup([node("n1")], {"n1": [pod("a", 1, "4")]})
    incoming = pod("p", 10, "2")
    _, _, state = s.preempt(incoming)
    s.cluster.fail_evict = 'pods "a" is forbidden'
    assert await s.plugin.evict(state, incoming) == Status(Code.ERROR, ('pods "a" is forbidden',))
    assert s.cluster.nominated == []
    assert await s.plugin.evict(CycleState(), incoming) == Status(Code.ERROR, ("no preemption chosen in this cycle",))
    s.plugin.handle.cluster = None
    assert await s.plugin.evict(state, incoming) == Status(Code.ERROR, ("no cluster to preempt on",))


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        (
            {"minCandidateNodesPercentage": 101},
            ["minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"],
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            ["minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            [
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
                "minCandidateNodesAbsolute; minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesPercentage"
            ],
        ),
    ],
    ids=["percentage", "absolute", "both-zero"],
)
def test_args_validation(args: dict[str, Any], problems: list[str]) -> None:
    spec = ProfileSpec(plugins=(PluginRef("DefaultPreemption"),), plugin_args={"DefaultPreemption": args})
    with pytest.raises(ConfigurationError) as err:
        Framework.build(spec, in_tree())
    assert [str(e) for e in err.value.errors] == [f"pluginConfig[DefaultPreemption].args: {p}" for p in problems]
