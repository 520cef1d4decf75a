"""NodeDeclaredFeatures: upstream's inference rules (component-helpers nodedeclaredfeatures/features), the Filter,
Skip for plain pods, the v1.35 no-op, queueing hints, signing and the slim extender node."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import Node, PodSpec
from kubesched.api.node_fields import NodeFields, node_type
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_UPDATE
from kubesched.framework.interfaces import CycleState, Handle, NodeInfo
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code
from kubesched.plugins import default_profile_plugins, in_tree
from kubesched.plugins.node_declared_features import ERR_REASON, NodeDeclaredFeatures, required_features
from kubesched.testing.builders import batch, make_pod, make_table, node_json, results
from kubesched.versions import Release, parse_release

V1_35, V1_37 = parse_release("1.35"), parse_release("1.37")
RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOSTNET = "UserNamespacesHostNetworkSupport"
BIND_MOUNT = "VolumeBindMountOptions"


def node(name: str, features: list[str] | None = None) -> Node:
    body = node_json(name)
    if features is not None:
        body["status"]["declaredFeatures"] = features
    return msgspec.convert(body, Node)


def spec(**fields: Any) -> PodSpec:
    return msgspec.convert(fields, PodSpec)


def ctr(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": "i", **fields}


RESTART_RULE = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]
BIND = [{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}]


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        ({"containers": [ctr()]}, set()),
        # restartallcontainers: a RestartAllContainers rule in a container or an init container.
        ({"containers": [ctr(restartPolicyRules=RESTART_RULE)]}, {RESTART_ALL}),
        ({"initContainers": [ctr(restartPolicyRules=RESTART_RULE)], "containers": [ctr()]}, {RESTART_ALL}),
        ({"containers": [ctr(restartPolicyRules=[{"action": "Restart", "exitCodes": {"values": [1]}}])]}, set()),
        ({"ephemeralContainers": [ctr(restartPolicyRules=RESTART_RULE)], "containers": [ctr()]}, set()),
        # usernamespaceshostnetwork: hostNetwork with hostUsers: false, and only then.
        ({"hostNetwork": True, "hostUsers": False, "containers": [ctr()]}, {USERNS_HOSTNET}),
        ({"hostNetwork": True, "containers": [ctr()]}, set()),
        ({"hostNetwork": True, "hostUsers": True, "containers": [ctr()]}, set()),
        ({"hostUsers": False, "containers": [ctr()]}, set()),
        # volumebindmountoptions: bindMountOptions on any mount, ephemeral containers included.
        ({"containers": [ctr(volumeMounts=BIND)]}, {BIND_MOUNT}),
        ({"initContainers": [ctr(volumeMounts=BIND)], "containers": [ctr()]}, {BIND_MOUNT}),
        ({"ephemeralContainers": [ctr(volumeMounts=BIND)], "containers": [ctr()]}, {BIND_MOUNT}),
        ({"containers": [ctr(volumeMounts=[{"name": "v", "mountPath": "/v", "bindMountOptions": []}])]}, set()),
        (
            {"hostNetwork": True, "hostUsers": False, "containers": [ctr(restartPolicyRules=RESTART_RULE)]},
            {RESTART_ALL, USERNS_HOSTNET},
        ),
        # In-place resize of pod-level resources or init containers needs a feature on update, never to schedule.
        ({"resources": {"requests": {"cpu": "1"}}, "containers": [ctr()]}, set()),
    ],
)
def test_inference_follows_upstreams_rules(fields: dict[str, Any], want: set[str]) -> None:
    assert required_features(spec(**fields), "1.37.2") == want


def plugin(release: Release = V1_37) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures(None, Handle(release=release))


NEEDS_RESTART_ALL = {"containers": [ctr(restartPolicyRules=RESTART_RULE)]}
NODES = [
    node("declares", [RESTART_ALL, BIND_MOUNT, "SomethingNewer"]),
    node("other", [BIND_MOUNT]),
    node("none"),
    node("empty", []),
]


def test_filter_keeps_only_nodes_declaring_every_required_feature() -> None:
    table = make_table(NODES)
    pod = make_pod(**NEEDS_RESTART_ALL)
    pl = plugin()
    assert pl.pre_filter(CycleState(), pod, table).status.code is Code.SUCCESS
    got = results(pl.filter(CycleState(), pod, batch(table)))
    assert got[0] is None
    for status in got[1:]:
        assert status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (ERR_REASON,)
    both = make_pod(hostNetwork=True, hostUsers=False, **NEEDS_RESTART_ALL)
    assert [s is None for s in results(pl.filter(CycleState(), both, batch(table)))] == [False] * 4


def test_plain_pods_skip() -> None:
    table = make_table(NODES)
    pod = make_pod(requests={"cpu": "1"})
    pl = plugin()
    assert pl.pre_filter(CycleState(), pod, table).status.code is Code.SKIP
    assert pl.filter(CycleState(), pod, batch(table)).all_passed


def test_v1_35_gate_off_does_nothing() -> None:
    """Alpha and off in v1.35: enabled by hand, the plugin skips every pod and registers no event."""
    table = make_table(NODES)
    pod = make_pod(**NEEDS_RESTART_ALL)
    pl = plugin(V1_35)
    assert pl.pre_filter(CycleState(), pod, table).status.code is Code.SKIP
    assert pl.filter(CycleState(), pod, batch(table)).all_passed
    assert pl.events_to_register() == []
    spec_ = ProfileSpec(plugins=(PluginRef("NodeDeclaredFeatures"),))
    fw = Framework.build(spec_, in_tree(), Handle(release=V1_35))
    assert fw.find_feasible(CycleState(), pod, batch(table)).feasible.tolist() == [0, 1, 2, 3]


def default_framework(release: Release) -> Framework:
    return Framework.build(
        ProfileSpec(plugins=default_profile_plugins(release=release)), in_tree(), Handle(release=release)
    )


@pytest.mark.parametrize(("release", "feasible"), [(V1_37, [0]), (V1_35, [0, 1, 2, 3])])
def test_default_profile_per_release(release: Release, feasible: list[int]) -> None:
    table = make_table(NODES)
    pod: PodInfo = make_pod(requests={"cpu": "100m"}, **NEEDS_RESTART_ALL)
    outcome = default_framework(release).find_feasible(CycleState(), pod, batch(table))
    assert outcome.feasible.tolist() == feasible
    if release is V1_37:
        assert outcome.diagnosis.message(len(table)) == (
            "0/4 nodes are available: 3 node(s) didn't match Pod's required features."
        )


def test_a_node_that_declares_the_feature_later_passes_after_the_update() -> None:
    table = make_table(NODES)
    pod = make_pod(**NEEDS_RESTART_ALL)
    pl = plugin()
    (registered,) = pl.events_to_register()
    assert registered.hint is not None
    row = table.index["other"]
    assert not registered.hint(pod, NODE_UPDATE, NodeInfo(table, row))
    table.upsert(node("other", [BIND_MOUNT, RESTART_ALL]))
    assert registered.hint(pod, NODE_UPDATE, NodeInfo(table, row))
    assert results(pl.filter(CycleState(), pod, batch(table)))[row] is None


def test_signature_is_the_feature_set() -> None:
    pl = plugin()
    assert pl.sign(make_pod(**NEEDS_RESTART_ALL)) == (("features", (RESTART_ALL,)),)
    assert pl.sign(make_pod(requests={"cpu": "1"})) == (("features", ()),)


def test_the_slim_extender_node_decodes_declared_features() -> None:
    raw = msgspec.json.encode(node_json("n") | {"status": {"declaredFeatures": [RESTART_ALL]}})
    slim = msgspec.json.decode(raw, type=node_type(NodeDeclaredFeatures.node_fields))
    assert slim.status.declared_features == [RESTART_ALL]
    other = msgspec.json.decode(raw, type=node_type(NodeFields()))
    assert other.status.declared_features is None


def test_the_frameworks_kept_verdicts_follow_a_node_that_comes_to_declare_the_feature() -> None:
    """Filter verdicts are kept per pod shape until a node's static fields change: declaredFeatures is one."""
    table = make_table(NODES)
    pod = make_pod(requests={"cpu": "100m"}, **NEEDS_RESTART_ALL)
    fw = default_framework(V1_37)
    assert fw.find_feasible(CycleState(), pod, batch(table)).feasible.tolist() == [0]
    table.upsert(node("none", [RESTART_ALL]))
    assert fw.find_feasible(
        CycleState(), make_pod(requests={"cpu": "100m"}, **NEEDS_RESTART_ALL), batch(table)
    ).feasible.tolist() == [0, 2]
