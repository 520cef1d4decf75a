"""The storage objects the volume plugins read: PersistentVolumes, PersistentVolumeClaims, StorageClasses and
CSINodes, with kube-scheduler's assume caches for PVs and PVCs (a reserved binding shows before the API has it).

Fed by list+watch (`source.scheduler_source`) or read from a cluster file; implements the plugins' `Volumes`
(`framework/volumes.py`). Writes go to ``api`` (the live scheduler's, over the API server); without one
(`--cluster FILE`) they apply here and complete the binding as the PV controller would, so the next pods see
the PV taken. Each change calls ``on_change`` with its kind and action (the scheduler moves parked pods).
Knows nothing of HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

import msgspec

from kubesched.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass

T = TypeVar("T", PersistentVolume, PersistentVolumeClaim)

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"

# (kind, action): kind is "PersistentVolume", "PersistentVolumeClaim", "StorageClass" or "CSINode";
# action "Add", "Update" or "Delete".
ChangeListener = Callable[[str, str], None]
_KINDS = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode")


class VolumeAPI(Protocol):
    """Where the live scheduler writes (the API server): the stored object comes back."""

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume: ...

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim: ...


def pv_class(pv: PersistentVolume) -> str:
    """GetPersistentVolumeClass: the beta annotation, else spec.storageClassName."""
    annotations = pv.metadata.annotations or {}
    return annotations.get(BETA_STORAGE_CLASS, pv.spec.storage_class_name)


def _rv(obj: PersistentVolume | PersistentVolumeClaim) -> int:
    try:
        return int(obj.metadata.resource_version or 0)
    except ValueError:
        return 0


class _Assumed(Generic[T]):
    """kube-scheduler's assume cache: the API's objects by key, and assumed versions in front of them."""

    def __init__(self) -> None:
        self.api: dict[str, T] = {}
        self.assumed: dict[str, T] = {}

    def get(self, key: str) -> T | None:
        got = self.assumed.get(key)
        return got if got is not None else self.api.get(key)

    def replace(self, items: Iterable[tuple[str, T]]) -> None:
        self.api = dict(items)
        self.assumed = {k: v for k, v in self.assumed.items() if k in self.api and _rv(self.api[k]) <= _rv(v)}

    def upsert(self, key: str, obj: T) -> bool:
        """Store the API's object; an assumed version older than it is dropped. Whether it was new."""
        new = key not in self.api
        self.api[key] = obj
        assumed = self.assumed.get(key)
        if assumed is not None and _rv(obj) > _rv(assumed):
            del self.assumed[key]
        return new

    def delete(self, key: str) -> None:
        self.api.pop(key, None)
        self.assumed.pop(key, None)


class VolumeObjects:
    """PVs, PVCs (by namespace/name), StorageClasses and CSINodes; the plugins' `Volumes`."""

    def __init__(
        self,
        pvs: Iterable[PersistentVolume] = (),
        pvcs: Iterable[PersistentVolumeClaim] = (),
        classes: Iterable[StorageClass] = (),
        csinodes: Iterable[CSINode] = (),
        *,
        api: VolumeAPI | None = None,
        listed: bool = True,
    ) -> None:
        self._pvs: _Assumed[PersistentVolume] = _Assumed()
        self._pvcs: _Assumed[PersistentVolumeClaim] = _Assumed()
        self._classes: dict[str, StorageClass] = {}
        self._csinodes: dict[str, CSINode] = {}
        self._by_class: dict[str, list[str]] | None = None  # PV names per class, rebuilt after a change
        self.api = api
        self.on_change: ChangeListener | None = None
        self._listed: set[str] = set()
        self.replace_pvs(list(pvs))
        self.replace_pvcs(list(pvcs))
        self.replace_classes(list(classes))
        self.replace_csinodes(list(csinodes))
        # The kinds listed so far (a watch's first list); all four when given whole (a cluster file).
        self._listed = set(_KINDS) if listed else set()

    @property
    def completes_bindings(self) -> bool:
        return self.api is None

    @property
    def synced(self) -> bool:
        """Whether PVs, claims, StorageClasses and CSINodes have all been listed (kube-scheduler waits for its
        informers' sync before it schedules; kubesched refuses pods with claims until then)."""
        return len(self._listed) == len(_KINDS)

    def _list_done(self, kind: str) -> None:
        if kind in self._listed:
            return
        self._listed.add(kind)
        if self.synced:  # pods refused while storage was not listed registered claims' additions: move them
            self._changed("PersistentVolumeClaim", "Add")

    def _changed(self, kind: str, action: str) -> None:
        if self.on_change is not None:
            self.on_change(kind, action)

    # ---- read (the plugins' Volumes) ---------------------------------------------------------------------

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self._pvcs.get(f"{namespace}/{name}")

    def pv(self, name: str) -> PersistentVolume | None:
        return self._pvs.get(name)

    def api_pv(self, name: str) -> PersistentVolume | None:
        return self._pvs.api.get(name)

    def api_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self._pvcs.api.get(f"{namespace}/{name}")

    def pvs_of_class(self, class_name: str) -> Sequence[PersistentVolume]:
        if self._by_class is None:
            by_class: dict[str, list[str]] = {}
            for name in sorted(self._pvs.api):
                by_class.setdefault(pv_class(self._pvs.api[name]), []).append(name)
            self._by_class = by_class
        out = []
        for name in self._by_class.get(class_name, ()):
            pv = self._pvs.get(name)
            if pv is not None:
                out.append(pv)
        return out

    def storage_class(self, name: str) -> StorageClass | None:
        return self._classes.get(name)

    def csinode(self, name: str) -> CSINode | None:
        return self._csinodes.get(name)

    def pvcs(self) -> list[PersistentVolumeClaim]:
        return [p for k in self._pvcs.api if (p := self._pvcs.get(k)) is not None]

    # ---- assume ------------------------------------------------------------------------------------------

    def assume_pv(self, pv: PersistentVolume) -> None:
        self._pvs.assumed[pv.metadata.name] = pv

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self._pvcs.assumed[f"{pvc.metadata.namespace}/{pvc.metadata.name}"] = pvc

    def restore_pv(self, name: str) -> None:
        self._pvs.assumed.pop(name, None)

    def restore_pvc(self, namespace: str, name: str) -> None:
        self._pvcs.assumed.pop(f"{namespace}/{name}", None)

    # ---- write -------------------------------------------------------------------------------------------

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume:
        if self.api is not None:
            stored = await self.api.update_pv(pv)
        else:
            stored = self._bind_in_memory(pv)
        self.upsert_pv(stored)
        return stored

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        stored = await self.api.update_pvc(pvc) if self.api is not None else _bumped(pvc)
        self.upsert_pvc(stored)
        return stored

    def _bind_in_memory(self, pv: PersistentVolume) -> PersistentVolume:
        """The PV controller's part, done at once: the PV and its claim are Bound to each other."""
        stored = msgspec.structs.replace(_bumped(pv), status=msgspec.structs.replace(pv.status, phase="Bound"))
        ref = pv.spec.claim_ref
        claim = self.api_pvc(ref.namespace, ref.name) if ref is not None else None
        if claim is not None:
            annotations = {**(claim.metadata.annotations or {}), BIND_COMPLETED: "yes"}
            claim = msgspec.structs.replace(
                _bumped(claim),
                spec=msgspec.structs.replace(claim.spec, volume_name=pv.metadata.name),
                status=msgspec.structs.replace(claim.status, phase="Bound"),
            )
            claim = msgspec.structs.replace(
                claim, metadata=msgspec.structs.replace(claim.metadata, annotations=annotations)
            )
            self.upsert_pvc(claim)
        return stored

    # ---- fed by a watch ----------------------------------------------------------------------------------

    def replace_pvs(self, items: list[PersistentVolume]) -> None:
        self._pvs.replace((p.metadata.name, p) for p in items)
        self._by_class = None
        self._changed("PersistentVolume", "Add")
        self._list_done("PersistentVolume")

    def upsert_pv(self, pv: PersistentVolume) -> None:
        old = self._pvs.api.get(pv.metadata.name)
        new = self._pvs.upsert(pv.metadata.name, pv)
        if old is None or pv_class(old) != pv_class(pv):
            self._by_class = None
        self._changed("PersistentVolume", "Add" if new else "Update")

    def delete_pv(self, pv: PersistentVolume) -> None:
        self._pvs.delete(pv.metadata.name)
        self._by_class = None
        self._changed("PersistentVolume", "Delete")

    def replace_pvcs(self, items: list[PersistentVolumeClaim]) -> None:
        self._pvcs.replace((f"{p.metadata.namespace}/{p.metadata.name}", p) for p in items)
        self._changed("PersistentVolumeClaim", "Add")
        self._list_done("PersistentVolumeClaim")

    def upsert_pvc(self, pvc: PersistentVolumeClaim) -> None:
        new = self._pvcs.upsert(f"{pvc.metadata.namespace}/{pvc.metadata.name}", pvc)
        self._changed("PersistentVolumeClaim", "Add" if new else "Update")

    def delete_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self._pvcs.delete(f"{pvc.metadata.namespace}/{pvc.metadata.name}")
        self._changed("PersistentVolumeClaim", "Delete")

    def replace_classes(self, items: list[StorageClass]) -> None:
        self._classes = {c.metadata.name: c for c in items}
        self._changed("StorageClass", "Add")
        self._list_done("StorageClass")

    def upsert_class(self, sc: StorageClass) -> None:
        new = sc.metadata.name not in self._classes
        self._classes[sc.metadata.name] = sc
        self._changed("StorageClass", "Add" if new else "Update")

    def delete_class(self, sc: StorageClass) -> None:
        self._classes.pop(sc.metadata.name, None)
        self._changed("StorageClass", "Delete")

    def replace_csinodes(self, items: list[CSINode]) -> None:
        self._csinodes = {c.metadata.name: c for c in items}
        self._changed("CSINode", "Add")
        self._list_done("CSINode")

    def upsert_csinode(self, node: CSINode) -> None:
        new = node.metadata.name not in self._csinodes
        self._csinodes[node.metadata.name] = node
        self._changed("CSINode", "Add" if new else "Update")

    def delete_csinode(self, node: CSINode) -> None:
        self._csinodes.pop(node.metadata.name, None)
        self._changed("CSINode", "Delete")


def _bumped(obj: T) -> T:
    """The object as the in-memory store keeps a write of it: its resourceVersion one higher."""
    meta = msgspec.structs.replace(obj.metadata, resource_version=str(_rv(obj) + 1))
    return msgspec.structs.replace(obj, metadata=meta)
