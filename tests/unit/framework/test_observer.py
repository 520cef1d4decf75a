"""An observer is told of every plugin call the framework makes: point, plugin, node(s), status(es), scores.

Off (None) by default; observed or not, a cycle decides the same.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from kubesched.cluster.cache import ClusterCache
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.interfaces import BindPlugin, CycleState, Handle, PostBindPlugin, PreBindPlugin
from kubesched.framework.profile import ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SKIP, SUCCESS, Code, Status
from kubesched.scheduler.engine.cycle import Cycle
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_node, make_pod

Call = tuple[str, str, tuple[str, ...], tuple[Status, ...], tuple[int, ...] | None]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[Call] = []

    def observe(
        self,
        point: str,
        plugin: str,
        nodes: Sequence[str],
        statuses: Sequence[Status],
        scores: Sequence[int] | None,
    ) -> None:
        self.calls.append((point, plugin, tuple(nodes), tuple(statuses), None if scores is None else tuple(scores)))

    def at(self, point: str, plugin: str) -> list[Call]:
        return [c for c in self.calls if c[0] == point and c[1] == plugin]


def default_profile() -> Profile:
    return build_default(Handle).profiles["default-scheduler"]


def cache_of(n: int) -> ClusterCache:
    cache = ClusterCache()
    nodes = [make_node(f"n{i}", labels={"disk": "ssd" if i % 2 else "hdd"}) for i in range(n)]
    nodes.append(make_node("cordoned", unschedulable=True))
    cache.replace_nodes(nodes)
    cache.synced.set()
    return cache


def test_a_framework_has_no_observer_unless_given_one() -> None:
    assert default_profile().framework.observer is None
    recorder = Recorder()
    fw = default_profile().framework.observed(recorder)
    assert fw.observer is recorder and fw.reserve and fw.score


async def test_the_observer_sees_every_filter_verdict_and_every_score_of_a_cycle() -> None:
    recorder = Recorder()
    profile = default_profile()
    observed = dataclasses.replace(profile, framework=profile.framework.observed(recorder))
    pod = make_pod("p", requests={"cpu": "100m"}, affinity=_prefer_ssd())
    out = await Cycle(cache_of(4), rng=random.Random(3), batching=False).run(observed, pod)
    plain = await Cycle(cache_of(4), rng=random.Random(3), batching=False).run(profile, pod)
    assert out.node == plain.node is not None  # observed or not, the same decision

    # NodeUnschedulable (a static filter, cached when unobserved) is seen on each node it was asked about.
    ((_, _, nodes, statuses, _),) = recorder.at("Filter", "NodeUnschedulable")
    verdict = dict(zip(nodes, statuses, strict=True))
    assert set(nodes) == {"n0", "n1", "n2", "n3", "cordoned"}
    cordoned = verdict["cordoned"]
    assert cordoned.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and cordoned.plugin == "NodeUnschedulable"
    assert all(verdict[f"n{i}"].ok for i in range(4))
    # Later filters see only the nodes the earlier ones passed.
    ((_, _, fit_nodes, _, _),) = recorder.at("Filter", "NodeResourcesFit")
    assert "cordoned" not in fit_nodes and len(fit_nodes) == 4

    # Raw and normalized scores per plugin, one per feasible node; NodeAffinity prefers ssd (odd nodes).
    ((_, _, scored, _, raw),) = recorder.at("Score", "NodeAffinity")
    ((_, _, normalized_nodes, _, normalized),) = recorder.at("ScoreExtensionNormalize", "NodeAffinity")
    assert scored == normalized_nodes and raw is not None and normalized is not None
    by_node = dict(zip(scored, normalized, strict=True))
    assert by_node["n1"] == by_node["n3"] == 100 and by_node["n0"] == by_node["n2"] == 0
    # The cycle's end: Reserve on the chosen node.
    reserve = [c for c in recorder.calls if c[0] == "Reserve"]
    assert reserve and all(c[2] == (out.node,) and c[3] == (SUCCESS,) for c in reserve)


def _prefer_ssd() -> dict[str, object]:
    term = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": term}]}}


class _Volumes(PreBindPlugin):
    name = "Volumes"

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS if pod.labels.get("volumes") else SKIP

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.unschedulable("no volume") if pod.labels.get("volumes") == "bad" else SUCCESS


class _Skips(BindPlugin):
    name = "Skips"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SKIP


class _Binds(BindPlugin, PostBindPlugin):
    name = "Binds"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise RuntimeError("post-bind bug")


async def test_the_binding_points_are_run_and_observed() -> None:
    recorder = Recorder()
    binds = _Binds()
    fw = Framework(ProfileSpec(), pre_bind=[_Volumes()], bind=[_Skips(), binds], post_bind=[binds], observer=recorder)
    state, pod = CycleState(), make_pod("p", labels={"volumes": "yes"})
    assert fw.run_pre_bind_pre_flight(state, pod, "n")
    assert await fw.run_pre_bind(state, pod, "n") is SUCCESS
    assert await fw.run_bind(state, pod, "n") == (SUCCESS, None)  # Skips skipped, Binds bound
    failure = fw.run_post_bind(state, pod, "n")  # bound all the same: the error is only handed back
    assert failure is not None and str(failure) == 'running PostBind plugin "Binds": RuntimeError: post-bind bug'
    assert [(c[0], c[1], c[2]) for c in recorder.calls] == [
        ("PreBindPreFlight", "Volumes", ("n",)),
        ("PreBindPreFlight", "Volumes", ("n",)),
        ("PreBind", "Volumes", ("n",)),
        ("Bind", "Skips", ("n",)),
        ("Bind", "Binds", ("n",)),
    ]  # a call that raised is logged and counted, not observed
    assert recorder.calls[3][3] == (SKIP,)
    bad = make_pod("q", labels={"volumes": "bad"})
    status = await fw.run_pre_bind(CycleState(), bad, "n")
    assert status.code == Code.UNSCHEDULABLE and status.plugin == "Volumes"
    assert not fw.run_pre_bind_pre_flight(CycleState(), make_pod("plain"), "n")  # nothing to do: no PreBind
