"""The scheduling cycle over the cache's table: how many nodes, from where, nominations, extenders, Permit."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any, ClassVar

import httpx
import msgspec
import pytest

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.config.profiles import SchedulerConfiguration, parse
from kubesched.config.v1 import Extender, ManagedResource
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.interfaces import CycleState, Handle, PermitPlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.engine.cycle import Cycle, num_feasible_nodes_to_find
from kubesched.scheduler.engine.nominator import Nominator
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import Built, build, build_default, load_registry
from kubesched.scheduler.remote.extenders import ExtenderSet
from kubesched.testing.builders import make_node, make_pod

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@pytest.mark.parametrize(
    ("nodes", "percentage", "scoring", "want"),
    [
        (50, 0, True, 50),
        (100, 0, True, 100),
        (500, 0, True, 230),
        (1000, 0, True, 420),
        (5000, 0, True, 500),
        (6000, 0, True, 300),
        (5000, 30, True, 1500),
        (200, 1, True, 100),
        (5000, 0, False, 1),
    ],
)
def test_num_feasible_nodes_to_find_is_kube_schedulers(nodes: int, percentage: int, scoring: bool, want: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage, scoring) == want


def cache_of(nodes: list[Node]) -> ClusterCache:
    cache = ClusterCache()
    cache.replace_nodes(nodes)
    cache.synced.set()
    return cache


def default_profile(config: SchedulerConfiguration | None = None) -> Profile:
    return build_default(Handle, config).profiles["default-scheduler"]


async def test_filtering_starts_where_the_last_cycle_stopped() -> None:
    cache = cache_of([make_node(f"n{i}") for i in range(300)])
    # Without opportunistic batching: pods of one signature would reuse the first cycle's nodes.
    cycle = Cycle(cache, rng=random.Random(1), batching=False)
    profile = default_profile()
    starts = []
    for i in range(3):
        starts.append(cycle.next_start)
        out = await cycle.run(profile, make_pod(f"p{i}", requests={"cpu": "10m"}))
        assert out.node is not None and out.feasible == 144  # 48% of 300
    assert starts == [0, 144, 288]
    assert cycle.next_start == (288 + 144) % 300


async def test_a_nominated_node_that_fits_is_taken_without_scoring() -> None:
    cache = cache_of([make_node("big", alloc={"cpu": "64", "memory": "64Gi", "pods": "110"}), make_node("small")])
    nominator = Nominator()
    cycle = Cycle(cache, nominator=nominator)
    pod = make_pod("p", requests={"cpu": "1"})
    nominator.add(pod, "small")
    out = await cycle.run(default_profile(), pod)
    assert out.node == "small" and out.feasible == 0  # no search, no scores
    assert nominator.node_of(pod.uid) is None  # assumed: the nomination is done
    assert cache.pod_node(pod.uid) == "small"


async def test_nominated_pods_keep_their_room_from_less_important_pods() -> None:
    cache = cache_of([make_node("only", alloc={"cpu": "2", "memory": "8Gi", "pods": "110"})])
    nominator = Nominator()
    cycle = Cycle(cache, nominator=nominator)
    nominator.add(make_pod("preemptor", requests={"cpu": "2"}, priority=100), "only")
    low = await cycle.run(default_profile(), make_pod("low", requests={"cpu": "1"}, priority=10))
    assert low.node is None and "1 Insufficient cpu" in low.message
    high = await cycle.run(default_profile(), make_pod("high", requests={"cpu": "1"}, priority=200))
    assert high.node == "only"


async def test_a_node_must_also_pass_without_the_nominated_pods_counted_there() -> None:
    # The pod's required affinity holds on "a" only thanks to a pod nominated there, which may yet land
    # elsewhere: kube-scheduler's second filter pass (without nominated pods) rejects "a".
    cache = cache_of([make_node("a", labels={"kubernetes.io/hostname": "a"})])
    nominator = Nominator()
    cycle = Cycle(cache, nominator=nominator)
    nominated = make_pod("leader", requests={"cpu": "100m"}, priority=100)
    nominated.labels["app"] = "x"
    nominator.add(nominated, "a")
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    follower = make_pod(
        "follower",
        requests={"cpu": "100m"},
        affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    out = await cycle.run(default_profile(), follower)
    assert out.node is None and out.message.startswith(
        "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."
    )
    cache.table.add_pod(cache.table.index["a"], nominated)  # now it is there for real
    nominator.remove(nominated.uid)
    assert (await cycle.run(default_profile(), follower)).node == "a"


async def test_the_failure_message_counts_reasons_and_names_rejecting_plugins() -> None:
    cache = cache_of([make_node("a", unschedulable=True), make_node("b"), make_node("c")])
    out = await Cycle(cache).run(default_profile(), make_pod("p", requests={"cpu": "100"}))
    assert out.node is None and out.status.code == Code.UNSCHEDULABLE and not out.error
    assert out.message.startswith("0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu.")
    assert out.plugins == frozenset({"NodeUnschedulable", "NodeResourcesFit"})


# ---- extenders ------------------------------------------------------------------------------------


def with_transport(extenders: ExtenderSet, handler: Callable[[httpx.Request], httpx.Response]) -> ExtenderSet:
    for ext in extenders.extenders:
        ext._client = httpx.AsyncClient(transport=httpx.MockTransport(handler), timeout=ext.timeout)
    return extenders


def nodes3() -> ClusterCache:
    return cache_of([make_node(n) for n in ("a", "b", "c")])


async def test_filter_extender_results_join_the_diagnosis() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        return httpx.Response(
            200,
            json={
                "NodeNames": None,
                "FailedNodes": {"a": "too hot", "b": "too hot"},
                "FailedAndUnresolvableNodes": {"b": "wrong rack"},
            },
        )

    ext = Extender("http://ext/sched/", filter_verb="filter", node_cache_capable=True)
    cycle = Cycle(nodes3(), extenders=with_transport(ExtenderSet([ext]), handler))
    out = await cycle.run(default_profile(), make_pod("p"))
    assert seen[0]["NodeNames"] == ["a", "b", "c"] and seen[0]["Nodes"] is None
    assert out.node is None
    # c vanished without a reason: it counts as absent, with none.
    assert out.message.startswith("0/3 nodes are available: 1 too hot, 1 wrong rack.")
    assert "Extender" in out.plugins


async def test_prioritize_scores_count_weight_times_ten_and_errors_are_ignored() -> None:
    def good(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=[{"Host": "c", "Score": 10}, {"Host": "zz", "Score": 10}])

    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="boom")

    scoring = with_transport(ExtenderSet([Extender("http://good", prioritize_verb="prio", weight=5)]), good)
    failing = with_transport(ExtenderSet([Extender("http://bad", prioritize_verb="prio", weight=5)]), broken)
    for _ in range(5):
        out = await Cycle(nodes3(), extenders=scoring).run(default_profile(), make_pod("p"))
        assert out.node == "c"  # +500 outweighs the plugins' differences
    out = await Cycle(nodes3(), extenders=failing).run(default_profile(), make_pod("p"))
    assert out.node in ("a", "b", "c") and out.status.ok


async def test_a_failing_filter_extender_is_an_error_unless_ignorable() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503)

    strict = with_transport(ExtenderSet([Extender("http://x", filter_verb="f")]), down)
    out = await Cycle(nodes3(), extenders=strict).run(default_profile(), make_pod("p"))
    assert out.error and "failed f with extender at URL http://x/f, code 503" in out.message
    lenient = with_transport(ExtenderSet([Extender("http://x", filter_verb="f", ignorable=True)]), down)
    out = await Cycle(nodes3(), extenders=lenient).run(default_profile(), make_pod("p"))
    assert out.node is not None


async def test_an_extender_with_managed_resources_sees_only_interested_pods() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(200, json={"NodeNames": ["a"]})

    ext = Extender(
        "http://x", filter_verb="f", node_cache_capable=True, managed_resources=(ManagedResource("example.com/gpu"),)
    )
    cycle = Cycle(nodes3(), extenders=with_transport(ExtenderSet([ext]), handler))
    out = await cycle.run(default_profile(), make_pod("plain"))
    assert calls == [] and out.node is not None
    gpu = make_pod("gpu", containers=[{"name": "c", "resources": {"limits": {"example.com/gpu": "1"}}}])
    out = await cycle.run(default_profile(), gpu)
    assert calls == ["/f"] and out.node == "a"


# ---- permit and binding, end to end in memory ------------------------------------------------------


class HoldAtPermit(PermitPlugin):
    name: ClassVar[str] = "HoldAtPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return Status(Code.WAIT), 0.05


async def test_a_pod_waiting_at_permit_past_its_timeout_is_unreserved_and_requeued() -> None:
    config = parse(
        {
            **HEAD,
            "profiles": [
                {"schedulerName": "default-scheduler", "plugins": {"permit": {"enabled": [{"name": "HoldAtPermit"}]}}}
            ],
        }
    )

    def make(mk: Callable[[str], Handle]) -> Built:
        registry, _ = load_registry((), lambda: [])
        registry.register(HoldAtPermit, "test")
        return build(config, registry, mk)

    node = msgspec.convert({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}}, Node)
    cluster = MemoryCluster([node], [make_pod("p", requests={"cpu": "1"}).pod])
    clock = ManualClock()
    scheduler = Scheduler(ClusterCache(), cluster, make, clock=clock)
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock, max_cycles=3)
    assert not any(p.spec.node_name for p in cluster.pods.values())
    assert scheduler.cache.pod_node("uid-p") is None  # forgotten
    assert "rejected due to timeout after waiting 0.05s at plugin HoldAtPermit" in cluster.conditions["default/p"][1]


async def test_nominated_pods_are_not_left_in_the_table_while_an_extender_is_awaited() -> None:
    # Item 13: the pod's nominated node goes to a filter extender (an await). Meanwhile the watch binds
    # another pod nominated to that node. Afterwards the table must count exactly what a fresh cache counts.
    alloc = {"cpu": "8", "memory": "8Gi", "pods": "110"}
    cache = cache_of([make_node("a", alloc=alloc), make_node("b", alloc=alloc)])
    nominator = Nominator()
    other = make_pod("other", requests={"cpu": "2", "memory": "1Gi"}, priority=100)
    pod = make_pod("p", requests={"cpu": "1", "memory": "1Gi"}, priority=10)
    nominator.add(other, "a")
    nominator.add(pod, "a")
    bound = msgspec.structs.replace(other.pod, spec=msgspec.structs.replace(other.pod.spec, node_name="a"))
    calls = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(json.loads(request.content)["NodeNames"])
        cache.upsert_pod(bound)  # the watch, while the extender is asked
        nominator.remove(other.uid)
        return httpx.Response(200, json={"NodeNames": ["a"]})

    ext = Extender("http://ext/", filter_verb="filter", node_cache_capable=True)
    cycle = Cycle(cache, nominator=nominator, extenders=with_transport(ExtenderSet([ext]), handler))
    out = await cycle.run(default_profile(), pod)
    assert calls == [["a"]] and out.node == "a"
    fresh = cache_of([make_node("a", alloc=alloc), make_node("b", alloc=alloc)])
    fresh.upsert_pod(bound)
    fresh.assume(pod, "a")
    for table in (cache.table, fresh.table):
        assert sorted(table.pods_on(table.index["a"])) == sorted([other.uid, pod.uid])
    for resource in ("cpu", "memory", "pods"):
        got = [cache.table.free_at(resource, cache.table.index[n]) for n in ("a", "b")]
        want = [fresh.table.free_at(resource, fresh.table.index[n]) for n in ("a", "b")]
        assert got == want, resource
