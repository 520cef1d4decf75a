"""NodeDeclaredFeatures: a pod that needs a node feature goes only to nodes declaring it (status.declaredFeatures).

Upstream: pkg/scheduler/framework/plugins/nodedeclaredfeatures and the feature registry of
k8s.io/component-helpers/nodedeclaredfeatures (features/registry.go). Of that registry only three features are
inferred from a pod's spec for scheduling; the others (in-place resize, DRA node operations, websockets) matter
on pod updates only, which the scheduler does not ask about.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import ClassVar

import numpy as np

from kubesched.api.core import Container, PodSpec
from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_CHANGE, ClusterEventWithHint
from kubesched.framework.interfaces import (
    CycleState,
    Handle,
    NodeBatch,
    PreFilterPlugin,
    PreFilterResult,
    SignFragments,
    SignPlugin,
    StaticFilterPlugin,
)
from kubesched.framework.status import SKIP, Status, Verdicts

ERR_REASON = "node(s) didn't match Pod's required features"

_REQUIRED = "NodeDeclaredFeatures/required"


def _containers(spec: PodSpec, ephemeral: bool = False) -> Iterator[Container]:
    yield from spec.containers or ()
    yield from spec.init_containers or ()
    if ephemeral:
        yield from spec.ephemeral_containers or ()


def _restarts_all_containers(spec: PodSpec) -> bool:
    # restartallcontainers: a restart rule of a container or an init container (not an ephemeral one).
    return any(r.action == "RestartAllContainers" for c in _containers(spec) for r in c.restart_policy_rules or ())


def _user_namespace_with_host_network(spec: PodSpec) -> bool:
    # usernamespaceshostnetwork: hostNetwork with hostUsers explicitly false.
    return spec.host_network and spec.host_users is False


def _bind_mount_options(spec: PodSpec) -> bool:
    # volumebindmountoptions: any volume mount with bindMountOptions, ephemeral containers included.
    return any(m.bind_mount_options for c in _containers(spec, ephemeral=True) for m in c.volume_mounts or ())


# The features inferred for scheduling: (name, the last minor that requires it or None, the rule). A feature past
# its last version is no longer required (ndf Framework.InferForPodScheduling skips it); none has one in 1.37.2.
FEATURES: tuple[tuple[str, tuple[int, int] | None, Callable[[PodSpec], bool]], ...] = (
    ("RestartAllContainersOnContainerExits", None, _restarts_all_containers),
    ("UserNamespacesHostNetworkSupport", None, _user_namespace_with_host_network),
    ("VolumeBindMountOptions", None, _bind_mount_options),
)


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def required_features(spec: PodSpec, version: str) -> frozenset[str]:
    """The features a pod with ``spec`` needs its node to declare, for the release ``version`` ("1.37.2")."""
    at = _minor(version)
    return frozenset(name for name, last, needs in FEATURES if (last is None or at <= last) and needs(spec))


class NodeDeclaredFeatures(PreFilterPlugin, StaticFilterPlugin, SignPlugin):
    """PreFilter infers the pod's required features (Skip when none); Filter keeps the nodes declaring them all.

    Off (Skip for every pod) where the release's NodeDeclaredFeatures gate is (v1.35)."""

    name: ClassVar[str] = "NodeDeclaredFeatures"
    node_fields = NodeFields(declared_features=True)
    reads_pods: ClassVar[bool] = False

    def __init__(self, args: object = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.enabled = self.handle.release.node_declared_features
        self._version = self.handle.release.version
        self._status = Status.unresolvable(ERR_REASON)

    def required(self, pod: PodInfo) -> frozenset[str]:
        """The pod's required features (empty when the gate is off), kept on the pod."""
        cached = pod.cache.get(_REQUIRED)
        if not isinstance(cached, frozenset):
            cached = frozenset()
            if self.enabled:
                cached = required_features(pod.pod.spec, self._version)
            pod.cache[_REQUIRED] = cached
        return cached

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or changed, if it now declares what the pod needs (upstream: Node
        Add|UpdateNodeDeclaredFeature)."""
        if not self.enabled:
            return []
        return [ClusterEventWithHint(NODE_CHANGE, self.passes_node)]

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        return PreFilterResult() if self.required(pod) else PreFilterResult(SKIP)

    def shape(self, pod: PodInfo) -> Hashable:
        return self.required(pod)

    def sign(self, pod: PodInfo) -> SignFragments:
        # Upstream's FeaturesSignerName fragment: the inferred feature set.
        return (("features", tuple(sorted(self.required(pod)))),)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        required = self.required(pod)
        if not required:
            return Verdicts.all_pass(len(nodes))
        codes, sets = nodes.table.declared_features()
        # Few distinct sets: decide each once, then look the rows' codes up.
        lacking = np.zeros(len(sets), dtype=np.bool_)
        for features, code in sets.items():
            lacking[code] = not required <= features
        return Verdicts.from_mask(lacking[codes[nodes.rows]], self._status)
