from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.core import LabelSelector, Node
from kubesched.core.podinfo import PodInfo
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SKIP, Code, Status
from kubesched.plugins import in_tree
from kubesched.plugins.helpers.spread_constraints import PodTopologySpreadArgs, round_half_away
from kubesched.plugins.pod_topology_spread import PodTopologySpread
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
WEB, DB = {"app": "web"}, {"app": "db"}
SKEW = Status(Code.UNSCHEDULABLE, ("node(s) didn't match pod topology spread constraints",))
MISSING = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ("node(s) didn't match pod topology spread constraints (missing required label)",),
)


def pod(name: str, labels: dict[str, str] | None = None, namespace: str = "default", **spec: Any) -> PodInfo:
    meta = {"deletionTimestamp": "2026-01-01T00:00:00Z"} if spec.pop("terminating", False) else {}
    return make_pod(name, namespace=namespace, labels=labels or {}, meta=meta, **spec)


def node(name: str, zone: str | None = None, **labels: str) -> Node:
    all_labels = {HOST: name, **labels}
    if zone is not None:
        all_labels[ZONE] = zone
    return make_node(name, labels=all_labels)


def spread(key: str, max_skew: int = 1, action: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": action,
        "labelSelector": {"matchLabels": WEB},
        **extra,
    }


def pods_on(existing: dict[str, list[dict[str, str] | PodInfo]]) -> dict[str, list[PodInfo]]:
    """Existing pods by node: label sets (default namespace) or ready-made pods."""
    return {
        n: [p if isinstance(p, PodInfo) else pod(f"{n}-{i}", p) for i, p in enumerate(ps)] for n, ps in existing.items()
    }


# a, b: zone z1 with disk=ssd; c: zone z2, tainted; d: no zone label.
FILTER_NODES = [
    node("a", "z1", disk="ssd"),
    node("b", "z1", disk="ssd"),
    make_node("c", labels={HOST: "c", ZONE: "z2"}, taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
    node("d", disk="ssd"),
]
TWO_WEB_ON_A = {"a": [WEB, WEB], "b": [DB]}


@pytest.mark.parametrize(
    ("existing", "labels", "spec", "expected"),
    [
        (TWO_WEB_ON_A, WEB, {"topologySpreadConstraints": [spread(ZONE)]}, [SKEW, SKEW, None, MISSING]),
        (TWO_WEB_ON_A, WEB, {"topologySpreadConstraints": [spread(ZONE, 3)]}, [None, None, None, MISSING]),
        # The pod itself does not match the selector: no +1 for it.
        (TWO_WEB_ON_A, DB, {"topologySpreadConstraints": [spread(ZONE)]}, [SKEW, SKEW, None, MISSING]),
        (TWO_WEB_ON_A, WEB, {"topologySpreadConstraints": [spread(HOST)]}, [SKEW, None, None, None]),
        # Two domains with one pod each: the minimum is 1, unless fewer domains than minDomains exist.
        ({"a": [WEB], "c": [WEB]}, WEB, {"topologySpreadConstraints": [spread(ZONE)]}, [None, None, None, MISSING]),
        (
            {"a": [WEB], "c": [WEB]},
            WEB,
            {"topologySpreadConstraints": [spread(ZONE, minDomains=3)]},
            [SKEW, SKEW, SKEW, MISSING],
        ),
        # Pods of other namespaces and terminating pods do not count.
        (
            {"a": [pod("other-ns", WEB, "other"), pod("leaving", WEB, terminating=True)]},
            WEB,
            {"topologySpreadConstraints": [spread(ZONE)]},
            [None, None, None, MISSING],
        ),
        # nodeAffinityPolicy Honor (default): zone z2 fails the pod's nodeSelector, so it is no domain.
        (
            TWO_WEB_ON_A,
            WEB,
            {"nodeSelector": {"disk": "ssd"}, "topologySpreadConstraints": [spread(ZONE)]},
            [None, None, None, MISSING],
        ),
        (
            TWO_WEB_ON_A,
            WEB,
            {"nodeSelector": {"disk": "ssd"}, "topologySpreadConstraints": [spread(ZONE, nodeAffinityPolicy="Ignore")]},
            [SKEW, SKEW, None, MISSING],
        ),
        # nodeTaintsPolicy Honor: the tainted zone is no domain, unless the pod tolerates the taint.
        (
            TWO_WEB_ON_A,
            WEB,
            {"topologySpreadConstraints": [spread(ZONE, nodeTaintsPolicy="Honor")]},
            [None, None, None, MISSING],
        ),
        (
            TWO_WEB_ON_A,
            WEB,
            {
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                "topologySpreadConstraints": [spread(ZONE, nodeTaintsPolicy="Honor")],
            },
            [SKEW, SKEW, None, MISSING],
        ),
        # matchLabelKeys: only pods with the pod's own rev count.
        (
            {"a": [{"app": "web", "rev": "1"}] * 2, "c": [{"app": "web", "rev": "2"}]},
            {"app": "web", "rev": "2"},
            {"topologySpreadConstraints": [spread(ZONE, matchLabelKeys=["rev"])]},
            [None, None, SKEW, MISSING],
        ),
        (
            {"a": [{"app": "web", "rev": "1"}] * 2, "c": [{"app": "web", "rev": "2"}]},
            {"app": "web", "rev": "2"},
            {"topologySpreadConstraints": [spread(ZONE)]},
            [SKEW, SKEW, None, MISSING],
        ),
        # An empty selector counts no pod, yet the pod matches it.
        (
            TWO_WEB_ON_A,
            WEB,
            {"topologySpreadConstraints": [{**spread(ZONE), "labelSelector": {}}]},
            [None, None, None, MISSING],
        ),
        # Constraint by constraint: d misses the zone before its hostname is looked at.
        (TWO_WEB_ON_A, WEB, {"topologySpreadConstraints": [spread(ZONE), spread(HOST)]}, [SKEW, SKEW, None, MISSING]),
    ],
    ids=[
        "skew",
        "within-max-skew",
        "self-not-matching",
        "hostname",
        "min-domains-met",
        "min-domains-short",
        "other-namespace-and-terminating",
        "node-affinity-policy-honor",
        "node-affinity-policy-ignore",
        "node-taints-policy-honor",
        "node-taints-policy-tolerated",
        "match-label-keys",
        "without-match-label-keys",
        "empty-selector",
        "first-failing-constraint-wins",
    ],
)
def test_filter(
    existing: dict[str, list[Any]], labels: dict[str, str], spec: dict[str, Any], expected: list[Status | None]
) -> None:
    table = make_table(FILTER_NODES, pods_on(existing))
    plugin, state, incoming = PodTopologySpread(), CycleState(), pod("p", labels, **spec)
    assert plugin.pre_filter(state, incoming, table).status.ok
    assert results(plugin.filter(state, incoming, batch(table))) == expected


@pytest.mark.parametrize(
    "spec",
    [{}, {"topologySpreadConstraints": [spread(ZONE, action="ScheduleAnyway")]}],
    ids=["system-defaults-without-selector", "only-soft-constraints"],
)
def test_pre_filter_skips_without_hard_constraints(spec: dict[str, Any]) -> None:
    result = PodTopologySpread().pre_filter(CycleState(), pod("p", WEB, **spec), make_table(FILTER_NODES))
    assert result.status == SKIP


def test_a_selector_that_does_not_parse_is_an_error() -> None:
    bad = {**spread(ZONE), "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Bad"}]}}
    result = PodTopologySpread().pre_filter(
        CycleState(), pod("p", WEB, topologySpreadConstraints=[bad]), make_table([])
    )
    assert result.status == Status.error(
        "get constraints from pod: obtaining pod's hard topology spread constraints: "
        '"Bad" is not a valid label selector operator'
    )


def test_list_defaults_use_the_selector_the_scheduler_derives() -> None:
    hard_zone = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    args = msgspec.convert({"defaultingType": "List", "defaultConstraints": [hard_zone]}, PodTopologySpreadArgs)
    table = make_table(FILTER_NODES, pods_on(TWO_WEB_ON_A))
    without = PodTopologySpread(args)
    assert without.pre_filter(CycleState(), pod("p", WEB), table).status == SKIP
    derived = Handle(default_selector=lambda p: LabelSelector(match_labels=dict(p.labels)))
    plugin, state = PodTopologySpread(args, derived), CycleState()
    assert plugin.pre_filter(state, pod("p", WEB), table).status.ok
    assert results(plugin.filter(state, pod("p", WEB), batch(table))) == [SKEW, SKEW, None, MISSING]


def test_removing_and_adding_pods_updates_the_counts() -> None:
    """The PreFilter extensions preemption uses (maxSkew 2): z1 passes with up to one of its two pods."""
    table = make_table(FILTER_NODES, pods_on(TWO_WEB_ON_A))
    plugin, state = PodTopologySpread(), CycleState()
    incoming = pod("p", WEB, topologySpreadConstraints=[spread(ZONE, 2)])
    plugin.pre_filter(state, incoming, table)
    assert results(plugin.filter(state, incoming, batch(table))) == [SKEW, SKEW, None, MISSING]
    victims = list(table.pods_on(0).values())
    for victim in victims:
        table.remove_pod(0, victim.uid)
        plugin.remove_pod(state, incoming, victim, table, 0)
    assert results(plugin.filter(state, incoming, batch(table))) == [None, None, None, MISSING]
    table.add_pod(0, victims[0])
    plugin.add_pod(state, incoming, victims[0], table, 0)
    assert results(plugin.filter(state, incoming, batch(table))) == [None, None, None, MISSING]
    table.add_pod(0, victims[1])
    plugin.add_pod(state, incoming, victims[1], table, 0)
    assert results(plugin.filter(state, incoming, batch(table))) == [SKEW, SKEW, None, MISSING]


def scores(plugin: PodTopologySpread, incoming: PodInfo, nodes: list[Node], existing: dict[str, Any]) -> list[int]:
    table = make_table(nodes, pods_on(existing))
    state = CycleState()
    assert plugin.pre_score(state, incoming, batch(table)).ok
    raw = plugin.score(state, incoming, batch(table))
    return plugin.normalize(state, incoming, batch(table), raw).tolist()


@pytest.mark.parametrize(
    ("nodes", "existing", "constraints", "expected"),
    [
        # w = ln(4 + 2); raw = round(count · w) = 4, 2, 0, 5; 100 · (5 + 0 − raw) / 5.
        (
            [node("h1"), node("h2"), node("h3"), node("h4")],
            {"h1": [WEB, WEB], "h2": [WEB], "h4": [WEB, WEB, WEB]},
            [spread(HOST, action="ScheduleAnyway")],
            [20, 60, 100, 0],
        ),
        # Two zones, w = ln 4: raw 4 (3 pods) and 1 (1 pod) -> 25 and 100.
        (
            [node("a", "z1"), node("b", "z1"), node("c", "z2"), node("d", "z2")],
            {"a": [WEB, WEB], "b": [WEB, DB], "c": [WEB]},
            [spread(ZONE, action="ScheduleAnyway")],
            [25, 25, 100, 100],
        ),
        # maxSkew − 1 is added to every node: raw 2 and round(ln 4 + 2) = 3.
        (
            [node("h1"), node("h2")],
            {"h2": [WEB]},
            [spread(HOST, 3, "ScheduleAnyway")],
            [100, 66],
        ),
        # The pod's own constraints need every key: c has no zone and scores 0.
        (
            [node("a", "z1"), node("b", "z1"), node("c")],
            {"a": [WEB]},
            [spread(ZONE, action="ScheduleAnyway")],
            [100, 100, 0],
        ),
    ],
    ids=["hostname", "zones", "max-skew", "missing-key-ignored"],
)
def test_score(nodes: list[Node], existing: dict[str, Any], constraints: list[Any], expected: list[int]) -> None:
    incoming = pod("p", WEB, topologySpreadConstraints=constraints)
    assert scores(PodTopologySpread(), incoming, nodes, existing) == expected


def test_system_defaults_score_with_the_derived_selector() -> None:
    """hostname (maxSkew 3, w = ln 5) and zone (maxSkew 5, domains z1 and "" -> w = ln 4); c has no zone.

    raw a = 2·ln5 + 2 + 2·ln4 + 4 = 11.99 -> 12, b = 2 + 2·ln4 + 4 = 8.77 -> 9, c = 2 (no zone term).
    """
    handle = Handle(default_selector=lambda p: LabelSelector(match_labels=WEB))
    nodes = [node("a", "z1"), node("b", "z1"), node("c")]
    assert scores(PodTopologySpread(handle=handle), pod("p", WEB), nodes, {"a": [WEB, WEB]}) == [16, 41, 100]


@pytest.mark.parametrize(
    ("handle", "spec"),
    [
        (Handle(), {}),
        (Handle(default_selector=lambda p: None), {}),
        (Handle(), {"topologySpreadConstraints": [spread(ZONE)]}),
    ],
    ids=["system-defaults-no-selector", "derived-selector-empty", "only-hard-constraints"],
)
def test_pre_score_skips_without_soft_constraints(handle: Handle, spec: dict[str, Any]) -> None:
    table = make_table([node("a", "z1")])
    assert PodTopologySpread(handle=handle).pre_score(CycleState(), pod("p", WEB, **spec), batch(table)) == SKIP


def test_round_half_away_from_zero() -> None:
    assert round_half_away(np.array([0.5, 1.5, 2.5, 2.4999999, 0.0])).tolist() == [1, 2, 3, 2, 0]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            {"defaultingType": "Custom"},
            'defaultingType: Unsupported value: "Custom": supported values: "System", "List"',
        ),
        (
            {"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
            },
            "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]},
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Maybe"}],
            },
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": '
            'supported values: "DoNotSchedule", "ScheduleAnyway"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
                ],
            },
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
            "as they deduced for each pod",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
            f'defaultConstraints[1]: Duplicate value: "{{{ZONE}, DoNotSchedule}}"',
        ),
    ],
    ids=[
        "defaulting-type",
        "system-with-constraints",
        "max-skew",
        "topology-key",
        "when-unsatisfiable",
        "selector",
        "duplicate",
    ],
)
def test_args_validation(args: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        Framework.build(
            ProfileSpec(plugins=(PluginRef("PodTopologySpread"),), plugin_args={"PodTopologySpread": args}), in_tree()
        )
    assert [str(e) for e in err.value.errors] == [f"pluginConfig[PodTopologySpread].args: {problem}"]
