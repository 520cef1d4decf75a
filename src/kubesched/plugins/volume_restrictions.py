"""VolumeRestrictions: inline disks that cannot be shared, and ReadWriteOncePod claims already in use.

kube-scheduler v1.35.4's volumerestrictions: PreFilter looks up the pod's PersistentVolumeClaims (a missing
one: UnschedulableAndUnresolvable with the API's `persistentvolumeclaim "x" not found`) and counts its
ReadWriteOncePod claims some scheduled pod already uses; it skips unless the pod has an inline GCE PD, AWS
EBS, RBD or iSCSI volume or such a conflict. Filter: `node(s) had no available disk` where a pod on the
node uses the same disk (not both read-only), and the ReadWriteOncePod conflict on every node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from kubesched.api.core import Pod, Volume
from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import (
    NODE_ADD,
    POD_DELETE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
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

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
_STATUSES = (Status.unschedulable(ERR_REASON_DISK_CONFLICT), Status.unschedulable(ERR_REASON_RWOP_CONFLICT))
_KEY = "VolumeRestrictions"
_SKIPPED = PreFilterResult(SKIP)


def _needs_check(vol: Volume) -> bool:
    return (
        vol.gce_persistent_disk is not None
        or vol.aws_elastic_block_store is not None
        or vol.rbd is not None
        or vol.iscsi is not None
    )


def _conflict(vol: Volume, pod: Pod) -> bool:
    """isVolumeConflict: ``vol`` and a volume of ``pod`` are the same disk, not both read-only."""
    for other in pod.spec.volumes or ():
        a, b = vol.gce_persistent_disk, other.gce_persistent_disk
        if a is not None and b is not None and a.pd_name == b.pd_name and not (a.read_only and b.read_only):
            return True
        e, f = vol.aws_elastic_block_store, other.aws_elastic_block_store
        if e is not None and f is not None and e.volume_id == f.volume_id:
            return True
        i, j = vol.iscsi, other.iscsi
        if i is not None and j is not None and i.iqn == j.iqn and not (i.read_only and j.read_only):
            return True
        r, s = vol.rbd, other.rbd
        if (
            r is not None
            and s is not None
            and set(r.monitors or ()) & set(s.monitors or ())
            and (r.pool, r.image) == (s.pool, s.image)
            and not (r.read_only and s.read_only)
        ):
            return True
    return False


def _claims_in_use(table: NodeTable, namespace: str, names: set[str]) -> int:
    """How many of the claims ``names`` (in ``namespace``) some pod in the table uses (StorageInfos)."""
    used: set[str] = set()
    for row, _ in table.live_nodes():
        for other in table.pods_on(row).values():
            if other.namespace != namespace or not other.pod.spec.volumes:
                continue
            for vol in other.pod.spec.volumes:
                if vol.persistent_volume_claim is not None and vol.persistent_volume_claim.claim_name in names:
                    used.add(vol.persistent_volume_claim.claim_name)
    return len(used)


@dataclass
class _ReadWriteOncePod:
    """PreFilter's state: the pod's ReadWriteOncePod claims and how many uses of them other pods make."""

    names: frozenset[str]
    conflicts: int

    def clone(self) -> _ReadWriteOncePod:
        return _ReadWriteOncePod(self.names, self.conflicts)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, SignPlugin):
    name: ClassVar[str] = "VolumeRestrictions"
    node_fields = NodeFields()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(POD_DELETE),
            ClusterEventWithHint(NODE_ADD),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)),
        ]

    def sign(self, pod: PodInfo) -> SignFragments | None:
        return () if not vh.has_volumes(pod.pod) else None

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        vols = pod.pod.spec.volumes
        if not vols:
            return _SKIPPED
        needs_check = any(_needs_check(v) for v in vols)
        claims = [v.persistent_volume_claim.claim_name for v in vols if v.persistent_volume_claim is not None]
        rwop: set[str] = set()
        if claims:
            volumes = self.handle.volumes
            if volumes is None or not volumes.synced:
                return PreFilterResult(vh.refusal(self.name, volumes))
            for name in claims:
                pvc = volumes.pvc(pod.namespace, name)
                if pvc is None:
                    return PreFilterResult(Status.unresolvable(vh.not_found(name)))
                if vh.READ_WRITE_ONCE_POD in (pvc.spec.access_modes or ()):
                    rwop.add(pvc.metadata.name)
        conflicts = _claims_in_use(table, pod.namespace, rwop) if rwop else 0
        if not needs_check and not conflicts:
            return _SKIPPED
        state[_KEY] = _ReadWriteOncePod(frozenset(rwop), conflicts)
        return PreFilterResult()

    # PreFilterExtensions (preemption's dry run): upstream's updateWithPod counts the other pod's volumes
    # naming one of the claims (by name only, as upstream).
    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int) -> None:
        self._update(state, added, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int) -> None:
        self._update(state, removed, -1)

    @staticmethod
    def _update(state: CycleState, other: PodInfo, sign: int) -> None:
        s = state.get(_KEY)
        if not isinstance(s, _ReadWriteOncePod) or not s.names:
            return
        uses = sum(
            1
            for v in other.pod.spec.volumes or ()
            if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in s.names
        )
        s.conflicts += sign * uses

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        n = len(nodes)
        table = nodes.table
        disks = [v for v in pod.pod.spec.volumes or () if _needs_check(v)]
        failed = np.zeros(n, dtype=np.bool_)
        if disks:
            for i, row in enumerate(nodes.rows.tolist()):
                others = table.pods_on(row).values()
                failed[i] = any(_conflict(v, other.pod) for v in disks for other in others)
        codes = failed.astype(np.int32)
        rwop = state.get(_KEY)
        if isinstance(rwop, _ReadWriteOncePod) and rwop.conflicts > 0:
            codes[~failed] = 2
        if not codes.any():
            return Verdicts.all_pass(n)
        return Verdicts(codes, _STATUSES)
