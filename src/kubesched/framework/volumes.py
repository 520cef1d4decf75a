"""What the volume plugins read and write of the cluster's storage (kube-scheduler's PV, PVC, StorageClass
and CSINode listers, its PV and PVC assume caches, and the two API updates of VolumeBinding's PreBind).

The scheduler shell offers it through `Handle.volumes` (`cluster.volumes.VolumeObjects`, fed by watches or
read from a cluster file); None where the shell tracks no storage (the extender, the webhook): a volume
plugin then refuses pods that use claims with a clear reason instead of placing them blindly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kubesched.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass


class Volumes(Protocol):
    """Storage objects by name, with assumed versions (a reserved binding) in front of the API's."""

    @property
    def completes_bindings(self) -> bool:
        """True where no PV controller runs (the in-memory cluster): a written binding is complete at once."""
        ...

    @property
    def synced(self) -> bool:
        """Whether every kind has been listed: before, a missing claim may only be not listed yet."""
        ...

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...

    def pv(self, name: str) -> PersistentVolume | None: ...

    def pvs_of_class(self, class_name: str) -> Sequence[PersistentVolume]:
        """Every PV of a storage class (assumed versions included), in name order."""
        ...

    def storage_class(self, name: str) -> StorageClass | None: ...

    def csinode(self, name: str) -> CSINode | None: ...

    def assume_pv(self, pv: PersistentVolume) -> None:
        """Keep ``pv`` in front of the API's version until the watch brings a newer one or `restore_pv`."""

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None: ...

    def restore_pv(self, name: str) -> None: ...

    def restore_pvc(self, namespace: str, name: str) -> None: ...

    def api_pv(self, name: str) -> PersistentVolume | None:
        """The API's version (not an assumed one): what PreBind waits on."""
        ...

    def api_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume:
        """Write the PV's claimRef and annotations; the stored answer. Raises ClusterAPIError."""
        ...

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """Write the PVC's annotations (the selected node); the stored answer. Raises ClusterAPIError."""
        ...
