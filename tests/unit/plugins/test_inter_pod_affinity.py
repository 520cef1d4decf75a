from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest

from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.core.podinfo import PodInfo
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import CycleState, Handle
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SKIP, Code, Status
from kubesched.plugins import in_tree
from kubesched.plugins.inter_pod_affinity import InterPodAffinity, InterPodAffinityArgs
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
WEB, DB = {"app": "web"}, {"app": "db"}
AFF = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match pod affinity rules",))
ANTI = Status(Code.UNSCHEDULABLE, ("node(s) didn't match pod anti-affinity rules",))
EXIST = Status(Code.UNSCHEDULABLE, ("node(s) didn't satisfy existing pods anti-affinity rules",))

# n1, n2 in zone z1; n3 in z2; n4 without a zone. Every node has its hostname label.
NODES = [
    make_node("n1", labels={HOST: "n1", ZONE: "z1"}),
    make_node("n2", labels={HOST: "n2", ZONE: "z1"}),
    make_node("n3", labels={HOST: "n3", ZONE: "z2"}),
    make_node("n4", labels={HOST: "n4"}),
]


class FakeCluster:
    """Only namespace labels matter here."""

    def __init__(self, namespaces: Mapping[str, Mapping[str, str]]) -> None:
        self.namespaces = namespaces

    async def bind(self, pod: PodInfo, node_name: str) -> None: ...

    async def evict(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> None: ...

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None: ...

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return ()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.namespaces.get(namespace)


def pod(name: str, labels: dict[str, str] | None = None, namespace: str = "default", **spec: Any) -> PodInfo:
    return make_pod(name, namespace=namespace, labels=labels or {}, **spec)


def term(key: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels if labels is not None else WEB}, "topologyKey": key, **extra}


def affinity(
    required: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[tuple[int, dict[str, Any]]] = (),
    anti_preferred: Sequence[tuple[int, dict[str, Any]]] = (),
) -> dict[str, Any]:
    def group(req: Sequence[dict[str, Any]], pref: Sequence[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
        weighted = [{"weight": w, "podAffinityTerm": t} for w, t in pref]
        return {
            "requiredDuringSchedulingIgnoredDuringExecution": list(req),
            "preferredDuringSchedulingIgnoredDuringExecution": weighted,
        }

    out: dict[str, Any] = {}
    if required or preferred:
        out["podAffinity"] = group(required, preferred)
    if anti or anti_preferred:
        out["podAntiAffinity"] = group(anti, anti_preferred)
    return {"affinity": out}


def placed(existing: Mapping[str, Sequence[PodInfo | dict[str, str]]]) -> dict[str, list[PodInfo]]:
    return {
        n: [p if isinstance(p, PodInfo) else pod(f"{n}-{i}", p) for i, p in enumerate(ps)] for n, ps in existing.items()
    }


OTHER_TEAM = {"other": {"team": "a"}, "default": {"team": "b"}}


@pytest.mark.parametrize(
    ("existing", "incoming", "namespaces", "expected"),
    [
        ({"n1": [WEB]}, pod("p", DB, **affinity([term(ZONE)])), None, [None, None, AFF, AFF]),
        # The first pod of a group with affinity to itself may go anywhere with the key.
        ({"n1": [DB]}, pod("p", WEB, **affinity([term(ZONE)])), None, [None, None, None, AFF]),
        ({"n1": [DB]}, pod("p", DB, **affinity([term(ZONE)])), None, [AFF, AFF, AFF, AFF]),
        # An existing pod counts only if it matches all terms; then for every term's key.
        (
            {"n1": [{"app": "web", "tier": "front"}], "n3": [WEB]},
            pod("p", DB, **affinity([term(ZONE), term(HOST, {"tier": "front"})])),
            None,
            [None, AFF, AFF, AFF],
        ),
        ({"n1": [WEB]}, pod("p", DB, **affinity(anti=[term(HOST)])), None, [ANTI, None, None, None]),
        ({"n1": [WEB]}, pod("p", DB, **affinity(anti=[term(ZONE)])), None, [ANTI, ANTI, None, None]),
        # Affinity is checked before anti-affinity.
        (
            {"n1": [WEB]},
            pod("p", DB, **affinity([term(ZONE)], [term(HOST)])),
            None,
            [ANTI, None, AFF, AFF],
        ),
        ({"n3": [pod("e", DB, **affinity(anti=[term(ZONE)]))]}, pod("p", WEB), None, [None, None, EXIST, None]),
        # Explicit namespaces: only the WEB pod of "other" counts.
        (
            {"n1": [pod("w", WEB, "other")], "n3": [WEB]},
            pod("p", DB, **affinity([term(ZONE, namespaces=["other"])])),
            None,
            [None, None, AFF, AFF],
        ),
        # An empty namespace selector selects all namespaces.
        (
            {"n3": [pod("w", WEB, "other")]},
            pod("p", DB, **affinity([term(ZONE, namespaceSelector={})])),
            None,
            [AFF, AFF, None, AFF],
        ),
        # A namespace selector is resolved through the cluster's namespace labels...
        (
            {"n3": [pod("w", WEB, "other")], "n1": [WEB]},
            pod("p", DB, **affinity([term(ZONE, namespaceSelector={"matchLabels": {"team": "a"}})])),
            OTHER_TEAM,
            [AFF, AFF, None, AFF],
        ),
        # ... and without a cluster no namespace is known to match it (nor does the pod match itself).
        (
            {"n3": [pod("w", WEB, "other")]},
            pod("p", WEB, **affinity([term(ZONE, namespaceSelector={"matchLabels": {"team": "a"}})])),
            None,
            [AFF, AFF, AFF, AFF],
        ),
        # An existing pod's namespace selector is matched against the incoming pod's namespace labels.
        (
            {
                "n1": [
                    pod(
                        "e",
                        DB,
                        "other",
                        **affinity(anti=[term(ZONE, namespaceSelector={"matchLabels": {"team": "b"}})]),
                    )
                ]
            },
            pod("p", WEB),
            OTHER_TEAM,
            [EXIST, EXIST, None, None],
        ),
    ],
    ids=[
        "affinity",
        "first-pod",
        "first-pod-not-self-matching",
        "all-terms",
        "anti-affinity-hostname",
        "anti-affinity-zone",
        "affinity-before-anti-affinity",
        "existing-anti-affinity",
        "namespaces",
        "all-namespaces",
        "namespace-selector",
        "namespace-selector-without-cluster",
        "existing-namespace-selector",
    ],
)
def test_filter(
    existing: Mapping[str, Sequence[Any]],
    incoming: PodInfo,
    namespaces: Mapping[str, Mapping[str, str]] | None,
    expected: list[Status | None],
) -> None:
    table = make_table(NODES, placed(existing))
    handle = Handle(cluster=FakeCluster(namespaces)) if namespaces is not None else Handle()
    plugin, state = InterPodAffinity(handle=handle), CycleState()
    assert plugin.pre_filter(state, incoming, table).status.ok
    assert results(plugin.filter(state, incoming, batch(table))) == expected


@pytest.mark.parametrize(
    "existing",
    [{}, {"n1": [pod("e", DB, "other", **affinity(anti=[term(ZONE)]))]}],
    ids=["no-pods", "existing-term-of-another-namespace"],
)
def test_pre_filter_skips_without_terms_or_matching_existing_anti_affinity(existing: dict[str, Any]) -> None:
    table = make_table(NODES, placed(existing))
    assert InterPodAffinity().pre_filter(CycleState(), pod("p", WEB), table).status == SKIP


def test_a_selector_that_does_not_parse_makes_the_pod_unschedulable() -> None:
    bad = {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Bad"}]}, "topologyKey": ZONE}
    result = InterPodAffinity().pre_filter(CycleState(), pod("p", **affinity([bad])), make_table(NODES))
    assert result.status == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ('parsing pod: requiredAffinityTerms: "Bad" is not a valid label selector operator',),
    )


def test_removing_a_pod_updates_every_counter() -> None:
    """PreFilter extensions: the anti-affinity the removed pod caused, and the one it had, both go."""
    guard = pod("guard", WEB, **affinity(anti=[term(HOST, DB)]))
    table = make_table(NODES, {"n1": [guard]})
    incoming = pod("p", DB, **affinity(anti=[term(HOST)]))
    plugin, state = InterPodAffinity(), CycleState()
    plugin.pre_filter(state, incoming, table)
    assert results(plugin.filter(state, incoming, batch(table)))[0] == ANTI
    table.remove_pod(0, guard.uid)
    plugin.remove_pod(state, incoming, guard, table, 0)
    assert results(plugin.filter(state, incoming, batch(table))) == [None, None, None, None]
    table.add_pod(0, guard)
    plugin.add_pod(state, incoming, guard, table, 0)
    assert results(plugin.filter(state, incoming, batch(table)))[0] == ANTI


def scored(plugin: InterPodAffinity, incoming: PodInfo, existing: Mapping[str, Sequence[Any]]) -> list[int] | Status:
    table = make_table(NODES, placed(existing))
    state = CycleState()
    status = plugin.pre_score(state, incoming, batch(table))
    if not status.ok:
        return status
    return plugin.normalize(state, incoming, batch(table), plugin.score(state, incoming, batch(table))).tolist()


@pytest.mark.parametrize(
    ("args", "existing", "incoming", "expected"),
    [
        # +5 per matching pod to its zone: z1 5, z2 10, n4 has no zone.
        ({}, {"n1": [WEB], "n3": [WEB, WEB]}, pod("p", DB, **affinity(preferred=[(5, term(ZONE))])), [50, 50, 100, 0]),
        ({}, {"n1": [WEB]}, pod("p", DB, **affinity(anti_preferred=[(4, term(HOST))])), [0, 100, 100, 100]),
        # Float scaling truncates: 100 · 1/3 -> 33.
        ({}, {"n1": [WEB], "n2": [WEB] * 3}, pod("p", DB, **affinity(preferred=[(1, term(HOST))])), [33, 100, 0, 0]),
        # An existing pod's required affinity matching the incoming pod adds hardPodAffinityWeight.
        ({}, {"n3": [pod("e", DB, **affinity([term(ZONE)]))]}, pod("p", WEB), [0, 0, 100, 0]),
        ({"hardPodAffinityWeight": 0}, {"n3": [pod("e", DB, **affinity([term(ZONE)]))]}, pod("p", WEB), SKIP),
        # Existing pods' preferred terms count, unless ignored (then, with no preferred terms of its own, skip).
        ({}, {"n1": [pod("e", DB, **affinity(anti_preferred=[(3, term(HOST))]))]}, pod("p", WEB), [0, 100, 100, 100]),
        (
            {"ignorePreferredTermsOfExistingPods": True},
            {"n1": [pod("e", DB, **affinity(anti_preferred=[(3, term(HOST))]))]},
            pod("p", WEB),
            SKIP,
        ),
        # Terms that cancel out still take part: every node scores 0.
        (
            {},
            {"n1": [WEB]},
            pod("p", DB, **affinity(preferred=[(5, term(ZONE))], anti_preferred=[(5, term(ZONE))])),
            [0, 0, 0, 0],
        ),
        ({}, {"n1": [WEB]}, pod("p", DB), SKIP),
    ],
    ids=[
        "preferred-affinity",
        "preferred-anti-affinity",
        "truncation",
        "hard-pod-affinity-weight",
        "hard-pod-affinity-weight-zero",
        "existing-preferred",
        "existing-preferred-ignored",
        "cancelled-out",
        "nothing-to-score",
    ],
)
def test_score(
    args: dict[str, Any], existing: Mapping[str, Sequence[Any]], incoming: PodInfo, expected: list[int] | Status
) -> None:
    plugin = InterPodAffinity(msgspec.convert(args, InterPodAffinityArgs))
    assert scored(plugin, incoming, existing) == expected


def test_hard_pod_affinity_weight_range() -> None:
    spec = ProfileSpec(
        plugins=(PluginRef("InterPodAffinity"),), plugin_args={"InterPodAffinity": {"hardPodAffinityWeight": 101}}
    )
    with pytest.raises(ConfigurationError) as err:
        Framework.build(spec, in_tree())
    assert [str(e) for e in err.value.errors] == [
        "pluginConfig[InterPodAffinity].args: hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
    ]
