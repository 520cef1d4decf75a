"""Storage objects of a cluster file (PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode): checked
with field paths, and completed as kube-apiserver's defaulting and the PV controller would leave them.

* a StorageClass without volumeBindingMode gets Immediate (kube-apiserver's default);
* a PV without status.phase is Available, or Bound when it has a claimRef (the PV controller's work);
* a PVC without a namespace or UID gets `default` and one; with spec.volumeName it is Bound, with the
  bind-completed annotation (the controller's, again).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.cluster.volumes import BIND_COMPLETED, VolumeObjects
from kubesched.core.quantity import QuantityError, to_int
from kubesched.errors import InputError

STORAGE_KINDS = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode")
StorageObject = PersistentVolume | PersistentVolumeClaim | StorageClass | CSINode
_MODES = ("Immediate", "WaitForFirstConsumer")
_ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
_VOLUME_MODES = ("Filesystem", "Block")


class StorageError(InputError):
    """What is wrong with a storage object; the message starts with the field path."""


def read_storage(kind: str, obj: Any) -> StorageObject:
    """One object of ``kind`` (one of `STORAGE_KINDS`); raises StorageError or msgspec.ValidationError."""
    if kind == "PersistentVolume":
        _raw_quantities(obj, ("spec", "capacity"))
        return _pv(msgspec.convert(obj, PersistentVolume))
    if kind == "PersistentVolumeClaim":
        _raw_quantities(obj, ("spec", "resources", "requests"))
        _raw_quantities(obj, ("spec", "resources", "limits"))
        return _pvc(msgspec.convert(obj, PersistentVolumeClaim))
    if kind == "StorageClass":
        sc = msgspec.convert(obj, StorageClass)
        _named(sc.metadata.name, kind)
        if sc.volume_binding_mode is None:
            return msgspec.structs.replace(sc, volume_binding_mode="Immediate")
        _one_of("volumeBindingMode", sc.volume_binding_mode, _MODES)
        return sc
    node = msgspec.convert(obj, CSINode)
    _named(node.metadata.name, kind)
    for i, driver in enumerate(node.spec.drivers or ()):
        if not driver.name:
            raise StorageError(f"spec.drivers[{i}].name: Required value")
        count = driver.allocatable.count if driver.allocatable is not None else None
        if count is not None and count < 0:
            raise StorageError(f"spec.drivers[{i}].allocatable.count: Invalid value: {count}: must be non-negative")
    return node


def _raw_quantities(obj: Any, path: tuple[str, ...]) -> None:
    """Name the key of a quantity map whose value is not a quantity (msgspec's path stops at the map)."""
    at = obj
    for key in path:
        if not isinstance(at, dict):
            return
        at = at.get(key)
    if isinstance(at, dict):
        for key, value in at.items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise StorageError(f"{'.'.join(path)}.{key}: expected a quantity, got {type(value).__name__}")


def _named(name: str, kind: str) -> None:
    if not name:
        raise StorageError(f"metadata.name: Required value: a {kind} needs a name")


def _one_of(path: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise StorageError(f'{path}: Unsupported value: "{value}": supported values: {", ".join(allowed)}')


def _quantity(path: str, value: str | int | float) -> None:
    try:
        amount = to_int(value)
    except QuantityError as err:
        raise StorageError(f"{path}: Invalid value: {value!r}: {err}") from None
    if amount < 0:
        raise StorageError(f"{path}: Invalid value: {value!r}: must be greater than or equal to 0")


def _modes(path: str, modes: list[str] | None, volume_mode: str | None) -> None:
    for i, mode in enumerate(modes or ()):
        _one_of(f"{path}.accessModes[{i}]", mode, _ACCESS_MODES)
    if volume_mode is not None:
        _one_of(f"{path}.volumeMode", volume_mode, _VOLUME_MODES)


def _pv(pv: PersistentVolume) -> PersistentVolume:
    _named(pv.metadata.name, "PersistentVolume")
    capacity = pv.spec.capacity or {}
    if "storage" not in capacity:
        raise StorageError("spec.capacity.storage: Required value")
    _quantity("spec.capacity.storage", capacity["storage"])
    _modes("spec", pv.spec.access_modes, pv.spec.volume_mode)
    if not pv.spec.access_modes:
        raise StorageError("spec.accessModes: Required value")
    if pv.status.phase:
        return pv
    phase = "Bound" if pv.spec.claim_ref is not None else "Available"
    return msgspec.structs.replace(pv, status=msgspec.structs.replace(pv.status, phase=phase))


def _pvc(pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
    _named(pvc.metadata.name, "PersistentVolumeClaim")
    requests = pvc.spec.resources.requests if pvc.spec.resources is not None else None
    if not requests or "storage" not in requests:
        raise StorageError("spec.resources.requests.storage: Required value")
    _quantity("spec.resources.requests.storage", requests["storage"])
    _modes("spec", pvc.spec.access_modes, pvc.spec.volume_mode)
    if not pvc.spec.access_modes:
        raise StorageError("spec.accessModes: Required value")
    meta = pvc.metadata
    if not meta.namespace:
        meta = msgspec.structs.replace(meta, namespace="default")
    if not meta.uid:  # the API server gives every object one; a claimRef names it
        meta = msgspec.structs.replace(meta, uid=f"file-pvc-{meta.namespace}-{meta.name}")
    if pvc.spec.volume_name and BIND_COMPLETED not in (meta.annotations or {}):
        meta = msgspec.structs.replace(meta, annotations={**(meta.annotations or {}), BIND_COMPLETED: "yes"})
        pvc = msgspec.structs.replace(pvc, status=msgspec.structs.replace(pvc.status, phase="Bound"))
    return msgspec.structs.replace(pvc, metadata=meta)


def volume_objects(items: list[StorageObject]) -> VolumeObjects:
    """The in-memory store of a file's storage objects (writes apply to it: no API server)."""
    return VolumeObjects(
        [o for o in items if isinstance(o, PersistentVolume)],
        [o for o in items if isinstance(o, PersistentVolumeClaim)],
        [o for o in items if isinstance(o, StorageClass)],
        [o for o in items if isinstance(o, CSINode)],
    )
