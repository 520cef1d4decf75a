"""VolumeZone: a node must be in the zone (and region) of the bound PersistentVolumes' topology labels.

kube-scheduler v1.35.4's volumezone: PreFilter reads the zone and region labels (GA and beta; a value may
list zones joined by `__`) of the PVs bound to the pod's claims, skipping unbound WaitForFirstConsumer
claims, and skips when there are none. Filter: a node with any zone or region label must match each of
them, else UnschedulableAndUnresolvable `node(s) had no available volume zone`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.api.storage import PersistentVolume
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_CHANGE, ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from kubesched.framework.interfaces import (
    CycleState,
    FilterPlugin,
    NodeBatch,
    PreFilterPlugin,
    PreFilterResult,
    SignFragments,
    SignPlugin,
)
from kubesched.framework.status import SKIP, Status, Verdicts
from kubesched.plugins.helpers import volumes as vh

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
_KEY = "VolumeZone"
_SKIPPED = PreFilterResult(SKIP)
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
_ZONE = "topology.kubernetes.io/zone"
_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (_BETA_ZONE, _BETA_REGION, _ZONE, _REGION)
_GA = {_BETA_ZONE: _ZONE, _BETA_REGION: _REGION}
_ADD_UPDATE = ActionType.ADD | ActionType.UPDATE


@dataclass(frozen=True)
class PVTopology:
    pv: str
    key: str
    values: frozenset[str]


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """getPVTopologies: a label whose `__`-separated list holds an empty zone is ignored."""
    out = []
    labels = pv.metadata.labels or {}
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = [z.strip() for z in labels[key].split("__")]
            if all(zones):
                out.append(PVTopology(pv.metadata.name, key, frozenset(zones)))
    return out


class VolumeZone(PreFilterPlugin, FilterPlugin, SignPlugin):
    name: ClassVar[str] = "VolumeZone"
    node_fields = NodeFields(labels=None)
    reads_pods: ClassVar[bool] = False

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD)),
            ClusterEventWithHint(NODE_CHANGE),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, _ADD_UPDATE)),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, _ADD_UPDATE)),
        ]

    def sign(self, pod: PodInfo) -> SignFragments | None:
        return () if not vh.has_volumes(pod.pod) else None

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        vols = pod.pod.spec.volumes
        if not vols:
            return _SKIPPED
        names = [v.persistent_volume_claim.claim_name for v in vols if v.persistent_volume_claim is not None]
        if not names:
            return _SKIPPED
        volumes = self.handle.volumes
        if volumes is None or not volumes.synced:
            return PreFilterResult(vh.refusal(self.name, volumes))
        topologies: list[PVTopology] = []
        for name in names:
            if not name:
                return PreFilterResult(Status.unresolvable("PersistentVolumeClaim had no name"))
            pvc = volumes.pvc(pod.namespace, name)
            if pvc is None:
                return PreFilterResult(Status.unresolvable(vh.not_found(name)))
            pv_name = pvc.spec.volume_name
            if not pv_name:
                class_name = vh.claim_class(pvc)
                if not class_name:
                    return PreFilterResult(
                        Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                    )
                sc = volumes.storage_class(class_name)
                if sc is None:
                    return PreFilterResult(Status.unresolvable(f'storageclass.storage.k8s.io "{class_name}" not found'))
                if sc.volume_binding_mode is None:
                    return PreFilterResult(
                        Status.unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                    )
                if sc.volume_binding_mode == vh.WAIT_FOR_FIRST_CONSUMER:
                    continue
                return PreFilterResult(Status.unresolvable("PersistentVolume had no name"))
            pv = volumes.pv(pv_name)
            if pv is None:
                return PreFilterResult(Status.unresolvable(f'persistentvolume "{pv_name}" not found'))
            topologies += pv_topologies(pv)
        if not topologies:
            return _SKIPPED
        state[_KEY] = topologies
        return PreFilterResult()

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        topologies: list[PVTopology] | None = state.get(_KEY)
        n = len(nodes)
        if not topologies:
            return Verdicts.all_pass(n)
        table = nodes.table
        failed = np.zeros(n, dtype=np.bool_)
        for i, row in enumerate(nodes.rows.tolist()):
            labels = table.node(row).metadata.labels or {}
            if not any(key in labels for key in TOPOLOGY_LABELS):
                continue
            for topo in topologies:
                value = labels.get(topo.key)
                if value is None:
                    value = labels.get(_GA.get(topo.key, topo.key))
                if value is None or value not in topo.values:
                    failed[i] = True
                    break
        if not failed.any():
            return Verdicts.all_pass(n)
        return Verdicts.from_mask(failed, Status.unresolvable(ERR_REASON_CONFLICT))
