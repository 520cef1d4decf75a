from __future__ import annotations

from typing import Any, ClassVar

import msgspec
import pytest

from kubesched.api.core import Pod
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo, compile_pod
from kubesched.framework.interfaces import CycleState, Handle, ScorePlugin
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.plugins import IN_TREE, default_profile_plugins, in_tree
from kubesched.plugins.default_preemption import DefaultPreemption
from kubesched.testing.builders import batch, make_node, make_pod, make_table
from kubesched.versions import REFERENCE, Release, parse_release

Z1 = {"zone": "z1"}


V1_35, V1_37 = parse_release("1.35"), parse_release("1.37")


@pytest.mark.parametrize(
    ("release", "first", "last"),
    [
        (V1_35, ("NodeUnschedulable", "NodeName"), ()),
        (V1_37, ("NodeName", "NodeUnschedulable"), (PluginRef("NodeDeclaredFeatures"),)),
    ],
)
def test_default_profile_order_and_weights(release: Release, first: tuple[str, str], last: tuple[PluginRef]) -> None:
    """default_plugins.go of each release: v1.37 runs NodeName before NodeUnschedulable and appends
    NodeDeclaredFeatures (GA there; alpha and off in v1.35, so not in its default profile)."""
    assert default_profile_plugins(release=release) == (
        PluginRef("SchedulingGates"),
        PluginRef("PrioritySort"),
        PluginRef(first[0]),
        PluginRef(first[1]),
        PluginRef("TaintToleration", 3),
        PluginRef("NodeAffinity", 2),
        PluginRef("NodePorts"),
        PluginRef("NodeResourcesFit", 1),
        PluginRef("VolumeRestrictions"),
        PluginRef("NodeVolumeLimits"),
        PluginRef("VolumeBinding", 1),
        PluginRef("VolumeZone"),
        PluginRef("PodTopologySpread", 2),
        PluginRef("InterPodAffinity", 2),
        PluginRef("DynamicResources", 2),
        PluginRef("DefaultPreemption"),
        PluginRef("NodeResourcesBalancedAllocation", 1),
        PluginRef("ImageLocality", 1),
        PluginRef("DefaultBinder"),
        *last,
    )
    assert default_profile_plugins() == default_profile_plugins(release=V1_37)  # the reference


class VolumeBinding(ScorePlugin):
    name: ClassVar[str] = "VolumeBinding"


def test_in_tree_is_a_new_registry_each_time_and_new_plugins_take_upstream_places() -> None:
    registry = Registry([p for p in IN_TREE if p.name != "VolumeBinding"])
    registry.register(VolumeBinding)
    assert in_tree() is not in_tree() and in_tree().get("VolumeBinding") is not VolumeBinding
    refs = default_profile_plugins(registry)
    assert refs[9:12] == (
        PluginRef("NodeVolumeLimits"),
        PluginRef("VolumeBinding", 1),
        PluginRef("VolumeZone"),
    )


def framework(release: Release = REFERENCE) -> Framework:
    spec = ProfileSpec(plugins=default_profile_plugins(release=release))
    return Framework.build(spec, in_tree(), Handle(release=release))


def host_port(port: int) -> dict[str, Any]:
    return {"name": "c", "ports": [{"containerPort": port, "hostPort": port}], "resources": {"requests": {"cpu": "2"}}}


# Each node fails a different filter for the pod below (cpu 2, nodeSelector zone=z1, host port 8080).
NODES = [
    make_node(
        "cordoned",
        labels=Z1,
        unschedulable=True,
        taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
    ),
    make_node("tainted", labels=Z1, taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
    make_node("elsewhere", labels={"zone": "z2"}),
    make_node("port-taken", labels=Z1),
    make_node("small", labels=Z1, alloc={"cpu": "1", "memory": "8Gi", "pods": "110"}),
    make_node("busy", labels=Z1),
    make_node("full", labels=Z1, alloc={"cpu": "4", "memory": "8Gi", "pods": "1"}),
]
EXISTING = {
    "port-taken": [make_pod("web", containers=[{"name": "c", "ports": [{"containerPort": 8080, "hostPort": 8080}]}])],
    "busy": [make_pod("hog", requests={"cpu": "3"})],
    "full": [make_pod("only", requests={"cpu": "100m"})],
}


def test_every_node_fails_with_its_first_failing_plugin() -> None:
    table = make_table(NODES, EXISTING)
    pod = make_pod(nodeSelector=Z1, containers=[host_port(8080)])
    outcome = framework().find_feasible(CycleState(), pod, batch(table))
    assert outcome.feasible.tolist() == []
    assert {table.names[row]: (status.plugin, status.code.name) for row, status in outcome.diagnosis.items()} == {
        "cordoned": ("NodeUnschedulable", "UNSCHEDULABLE_AND_UNRESOLVABLE"),
        "tainted": ("TaintToleration", "UNSCHEDULABLE_AND_UNRESOLVABLE"),
        "elsewhere": ("NodeAffinity", "UNSCHEDULABLE_AND_UNRESOLVABLE"),
        "port-taken": ("NodePorts", "UNSCHEDULABLE"),
        "small": ("NodeResourcesFit", "UNSCHEDULABLE_AND_UNRESOLVABLE"),
        "busy": ("NodeResourcesFit", "UNSCHEDULABLE"),
        "full": ("NodeResourcesFit", "UNSCHEDULABLE"),
    }
    assert outcome.diagnosis.message(len(table)) == (
        "0/7 nodes are available: 1 Too many pods, "
        "1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 2 Insufficient cpu."
    )


def name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        (
            [{"matchFields": [name_in("port-taken")]}, {"matchFields": [name_in("gone")]}],
            "0/7 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
            "6 node(s) didn't satisfy plugin(s) [NodeAffinity].",
        ),
        # Names the snapshot lacks are dropped: every node gets the absent status.
        (
            [{"matchFields": [name_in("gone")]}],
            "0/7 nodes are available: 7 node(s) didn't satisfy plugin(s) [NodeAffinity].",
        ),
        # matchFields takes exactly one name: PreFilter narrows to both, Filter rejects them as unparsable.
        (
            [{"matchFields": [name_in("port-taken", "small")]}],
            "0/7 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
            "5 node(s) didn't satisfy plugin(s) [NodeAffinity].",
        ),
        (
            [{"matchFields": [name_in("small"), name_in("busy")]}],
            "0/7 nodes are available: pod affinity terms conflict.",
        ),
    ],
    ids=["narrowed", "unknown-name", "two-names-in-one-requirement", "conflict"],
)
def test_node_name_affinity_narrows_before_filtering(terms: list[dict[str, Any]], message: str) -> None:
    table = make_table(NODES, EXISTING)
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    pod = make_pod(affinity=affinity, containers=[host_port(8080)])
    outcome = framework().find_feasible(CycleState(), pod, batch(table))
    assert outcome.feasible.tolist() == []
    assert outcome.diagnosis.message(len(table)) == message


@pytest.mark.parametrize(("release", "balanced"), [(V1_35, 93), (V1_37, 50 + (50 + 93 - 100) // 2)])
def test_feasible_nodes_are_scored_with_default_weights(release: Release, balanced: int) -> None:
    table = make_table(
        [
            make_node("soft-tainted", labels=Z1, taints=[{"key": "spot", "effect": "PreferNoSchedule"}]),
            make_node("plain", labels={"zone": "z2"}),
        ]
    )
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                }
            ]
        }
    }
    pod = make_pod(requests={"cpu": "1", "memory": "1Gi"}, affinity=affinity)
    fw, state = framework(release), CycleState()
    outcome = fw.find_feasible(state, pod, batch(table))
    assert outcome.feasible.tolist() == [0, 1]
    totals, weight_sum = fw.prioritize(state, pod, batch(table))
    # TaintToleration (weight 3): 0 / 100; NodeAffinity (weight 2): 100 / 0;
    # Fit: (75 + 87)/2 = 81; Balanced: std 0.0625 -> 93 with the pod (v1.35's score), 100 without it (v1.37
    # scores the change: 71); ImageLocality (weight 1): 0 / 0.
    # PodTopologySpread and InterPodAffinity skip: no spreading constraints, no pod affinity anywhere.
    assert totals.tolist() == [0 * 3 + 100 * 2 + 81 + balanced, 100 * 3 + 0 * 2 + 81 + balanced]
    # DynamicResources skips scoring a pod without claims (upstream scores it 0 everywhere: the same totals).
    assert weight_sum == 8


# ---- the whole default profile, PostFilter included ----------------------------------------------

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"


def with_preemption() -> tuple[Framework, DefaultPreemption]:
    """The default profile as the scheduler builds it: DefaultPreemption reaches the framework through the handle."""
    handle = Handle()
    fw = Framework.build(ProfileSpec(plugins=default_profile_plugins()), in_tree(), handle)
    handle.framework = fw
    dra, plugin = fw.post_filter  # in the default profile's order: DynamicResources first
    assert dra.name == "DynamicResources"
    assert isinstance(plugin, DefaultPreemption)
    plugin.random_offset = lambda n: 0
    return fw, plugin


def attempt(table: NodeTable, pod: PodInfo) -> tuple[str | None, str]:
    """One failed scheduling attempt: the nominated node and kube-scheduler's FailedScheduling message."""
    fw, _ = with_preemption()
    state = CycleState()
    outcome = fw.find_feasible(state, pod, batch(table))
    assert outcome.feasible.tolist() == []
    reasons = []
    for post in fw.post_filter:  # as the cycle runs them: rejected reasons add up, a success ends it
        nominated, status = post.post_filter(state, pod, table, outcome.diagnosis)
        if status.ok:
            reasons = []
            break
        reasons += status.reasons
    outcome.diagnosis.post_filter_message = ", ".join(reasons)
    return nominated, outcome.diagnosis.message(len(table))


def labelled(name: str, labels: dict[str, str], priority: int = 0, **spec: Any) -> PodInfo:
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels}
    return compile_pod(msgspec.convert({"metadata": meta, "spec": {"priority": priority, **spec}}, Pod))


def test_full_profile_message_when_preemption_cannot_help() -> None:
    """§2.8's worked shape, with v1.35's DynamicResources PostFilter reason for a pod without claims ("no
    new claims to deallocate, ") before "preemption: " (1.37 drops it)."""
    table = make_table(
        [
            make_node("tainted", taints=[{"key": "dedicated", "effect": "NoSchedule"}]),
            make_node("n1", alloc={"cpu": "2", "memory": "8Gi", "pods": "110"}),
            make_node("n2", alloc={"cpu": "2", "memory": "8Gi", "pods": "110"}),
        ],
        {"n1": [make_pod("a", requests={"cpu": "2"})], "n2": [make_pod("b", requests={"cpu": "2"})]},
    )
    assert attempt(table, make_pod("p", requests={"cpu": "1"})) == (
        "",
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.",
    )


def test_full_profile_message_with_spreading_and_anti_affinity() -> None:
    web = {"app": "web"}
    table = make_table(
        [
            make_node("n1", labels={HOST: "n1", ZONE: "z1"}),
            make_node("n2", labels={HOST: "n2", ZONE: "z2"}),
            make_node("n3", labels={HOST: "n3"}),
            make_node("n4", labels={HOST: "n4", ZONE: "z3"}, taints=[{"key": "k", "effect": "NoSchedule"}]),
        ],
        {"n1": [labelled("w1", web)], "n2": [labelled("w2", web)]},
    )
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": web}, "topologyKey": HOST}
            ]
        }
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "p"}},
        }
    ]
    pod = labelled("p", {"app": "p"}, affinity=anti, topologySpreadConstraints=spread)
    assert attempt(table, pod) == (
        "",
        "0/4 nodes are available: 1 node(s) didn't match pod topology spread constraints (missing required label), "
        "1 node(s) had untolerated taint(s), 2 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/4 nodes are available: "
        "2 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
    )


def test_full_profile_successful_preemption_adds_no_suffix() -> None:
    table = make_table(
        [make_node("n1", alloc={"cpu": "2", "memory": "8Gi", "pods": "110"})],
        {"n1": [make_pod("low", requests={"cpu": "2"}, priority=1)]},
    )
    assert attempt(table, make_pod("p", requests={"cpu": "1"}, priority=10)) == (
        "n1",
        "0/1 nodes are available: 1 Insufficient cpu.",
    )
