"""NodeVolumeLimits: a node's CSI drivers attach at most `CSINode.spec.drivers[].allocatable.count` volumes.

kube-scheduler v1.35.4's nodevolumelimits (csi.go): PreFilter skips unless the pod has a claim, a generic
ephemeral volume or an inline in-tree disk migrated to CSI. Filter counts, per driver, the unique volumes
the node's pods attach and the new ones the pod brings (a claim's driver and handle from its bound CSI PV,
else from its class's provisioner; in-tree AWS EBS, GCE PD, Azure Disk and Cinder count for their CSI
driver once the node has a CSINode): more than the limit is Unschedulable `node(s) exceed max volume count`.
A new pod's missing claim: UnschedulableAndUnresolvable `looking up PVC <ns>/<name>: persistentvolumeclaim
"<name>" not found`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from kubesched.api.core import Pod, Volume
from kubesched.api.node_fields import NodeFields
from kubesched.api.storage import CSINode, PersistentVolumeClaim
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.errors import PluginError
from kubesched.framework.events import POD_DELETE, ActionType, ClusterEvent, ClusterEventWithHint, EventResource
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
from kubesched.framework.volumes import Volumes
from kubesched.plugins.helpers import volumes as vh

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_SKIPPED = PreFilterResult(SKIP)
_RUN = PreFilterResult()
# csi-translation-lib: the in-tree plugins migrated to CSI by default, and their CSI drivers.
_MIGRATED = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
}


def _inline(vol: Volume) -> tuple[str, str] | None:
    """An inline in-tree disk migrated to CSI: (in-tree plugin, volume handle)."""
    if vol.aws_elastic_block_store is not None:
        return "kubernetes.io/aws-ebs", vol.aws_elastic_block_store.volume_id.rsplit("/", 1)[-1]
    if vol.gce_persistent_disk is not None:
        return "kubernetes.io/gce-pd", f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{vol.gce_persistent_disk.pd_name}"
    if vol.azure_disk is not None:
        return "kubernetes.io/azure-disk", vol.azure_disk.disk_uri
    if vol.cinder is not None:
        return "kubernetes.io/cinder", vol.cinder.volume_id
    return None


def _limits(csinode: CSINode | None) -> dict[str, int]:
    if csinode is None:
        return {}
    return {
        d.name: d.allocatable.count
        for d in csinode.spec.drivers or ()
        if d.allocatable is not None and d.allocatable.count is not None
    }


class _LookupError(PluginError):
    """filterAttachableVolumes' error for the new pod."""

    def __init__(self, message: str, unresolvable: bool) -> None:
        super().__init__(message)
        self.unresolvable = unresolvable


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, SignPlugin):
    name: ClassVar[str] = "NodeVolumeLimits"
    node_fields = NodeFields()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(POD_DELETE),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)),
        ]

    def sign(self, pod: PodInfo) -> SignFragments | None:
        return () if not vh.has_volumes(pod.pod) else None

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        vols = pod.pod.spec.volumes
        if not vols:
            return _SKIPPED
        claims = any(v.persistent_volume_claim is not None or v.ephemeral is not None for v in vols)
        volumes = self.handle.volumes
        if claims and (volumes is None or not volumes.synced):
            return PreFilterResult(vh.refusal(self.name, volumes))
        if claims or any(_inline(v) is not None for v in vols):
            return _RUN
        return _SKIPPED

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        n = len(nodes)
        volumes = self.handle.volumes
        if not pod.pod.spec.volumes or volumes is None:
            return Verdicts.all_pass(n)
        table = nodes.table
        names = table.names
        codes = np.zeros(n, dtype=np.int32)
        statuses: list[Status] = []
        seen: dict[Status, int] = {}
        for i, row in enumerate(nodes.rows.tolist()):
            status = self._filter_node(pod, volumes, names[row], table, row)
            if status is not None:
                code = seen.get(status)
                if code is None:
                    statuses.append(status)
                    code = seen[status] = len(statuses)
                codes[i] = code
        if not statuses:
            return Verdicts.all_pass(n)
        return Verdicts(codes, statuses)

    def _filter_node(self, pod: PodInfo, volumes: Volumes, node: str, table: NodeTable, row: int) -> Status | None:
        csinode = volumes.csinode(node)
        new: dict[str, str] = {}
        try:
            _attachable(pod.pod, csinode, volumes, True, new)
        except _LookupError as err:
            return Status.unresolvable(str(err)) if err.unresolvable else Status.error(str(err))
        if not new:
            return None
        limits = _limits(csinode)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for other in table.pods_on(row).values():
            if other.pod.spec.volumes:
                try:
                    _attachable(other.pod, csinode, volumes, False, attached)
                except _LookupError as err:
                    return Status.error(str(err))
        count: dict[str, int] = {}
        for unique, driver in attached.items():
            new.pop(unique, None)
            count[driver] = count.get(driver, 0) + 1
        adding: dict[str, int] = {}
        for driver in new.values():
            adding[driver] = adding.get(driver, 0) + 1
        for driver, more in adding.items():
            limit = limits.get(driver)
            if limit is not None and count.get(driver, 0) + more > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None


def _attachable(pod: Pod, csinode: CSINode | None, volumes: Volumes, new: bool, out: dict[str, str]) -> None:
    """filterAttachableVolumes: unique volume name -> CSI driver, for the pod's attachable volumes."""
    for vol in pod.spec.volumes or ():
        if vol.persistent_volume_claim is not None:
            name, ephemeral = vol.persistent_volume_claim.claim_name, False
        elif vol.ephemeral is not None:
            name, ephemeral = f"{pod.metadata.name}-{vol.name}", True
        else:
            inline = _inline(vol)
            if inline is not None and csinode is not None:  # isCSIMigrationOn: any CSINode, for these four
                out[f"{_MIGRATED[inline[0]]}/{inline[1]}"] = _MIGRATED[inline[0]]
            continue
        if not name:
            raise _LookupError("PersistentVolumeClaim had no name", False)
        pvc = volumes.pvc(pod.metadata.namespace, name)
        if pvc is None:
            if new:
                raise _LookupError(f"looking up PVC {pod.metadata.namespace}/{name}: {vh.not_found(name)}", True)
            continue
        if ephemeral and (why := vh.volume_is_for_pod(pod, pvc)) is not None:
            raise _LookupError(why, False)
        driver, handle = _driver_info(csinode, volumes, pvc)
        if driver and handle:
            out[f"{driver}/{handle}"] = driver


def _driver_info(csinode: CSINode | None, volumes: Volumes, pvc: PersistentVolumeClaim) -> tuple[str, str]:
    """getCSIDriverInfo: from the bound PV, else from the claim's class (a handle of its own per claim)."""
    pv = volumes.pv(pvc.spec.volume_name) if pvc.spec.volume_name else None
    if pv is not None:
        if pv.spec.csi is not None:
            return pv.spec.csi.driver, pv.spec.csi.volume_handle
        spec = pv.spec
        migrated = (
            ("kubernetes.io/aws-ebs", spec.aws_elastic_block_store.volume_id.rsplit("/", 1)[-1])
            if spec.aws_elastic_block_store is not None
            else ("kubernetes.io/gce-pd", spec.gce_persistent_disk.pd_name)
            if spec.gce_persistent_disk is not None
            else ("kubernetes.io/azure-disk", spec.azure_disk.disk_uri)
            if spec.azure_disk is not None
            else ("kubernetes.io/cinder", spec.cinder.volume_id)
            if spec.cinder is not None
            else None
        )
        if migrated is None or csinode is None:
            return "", ""
        return _MIGRATED[migrated[0]], migrated[1]
    class_name = vh.claim_class(pvc)
    sc = volumes.storage_class(class_name) if class_name else None
    if sc is None:
        return "", ""
    handle = f"-{pvc.metadata.namespace}/{pvc.metadata.name}"  # upstream: a random prefix, then the claim
    if sc.provisioner in _MIGRATED:
        return (_MIGRATED[sc.provisioner], handle) if csinode is not None else ("", "")
    return sc.provisioner, handle
