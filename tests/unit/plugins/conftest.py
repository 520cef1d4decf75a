"""Storage objects for the volume plugins' tests (typed, as the watches or a cluster file give them)."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.cluster.volumes import BIND_COMPLETED

HOST = "kubernetes.io/hostname"


def pv(
    name: str,
    size: str = "10Gi",
    *,
    sc: str = "",
    on: str | None = None,
    claim: tuple[str, str, str] | None = None,
    phase: str = "Available",
    labels: dict[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    **spec: Any,
) -> PersistentVolume:
    """A PV; ``on`` pins it to one node by hostname (node affinity), ``claim`` = (namespace, name, uid)."""
    body: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": sc, **spec}
    if on is not None:
        expr = {"key": HOST, "operator": "In", "values": [on]}
        body["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    if claim is not None:
        body["claimRef"] = {"namespace": claim[0], "name": claim[1], "uid": claim[2]}
        phase = "Bound"
    meta = {"name": name, "resourceVersion": "1", "labels": labels or {}}
    return msgspec.convert({"metadata": meta, "spec": body, "status": {"phase": phase}}, PersistentVolume)


def pvc(
    name: str,
    size: str = "5Gi",
    *,
    sc: str | None = None,
    volume: str = "",
    bound: bool = False,
    namespace: str = "default",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    **meta: Any,
) -> PersistentVolumeClaim:
    """A claim; ``bound``: the PV controller completed its binding to ``volume``."""
    notes = dict(annotations or {})
    if bound:
        notes[BIND_COMPLETED] = "yes"
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if sc is not None:
        spec["storageClassName"] = sc
    if volume:
        spec["volumeName"] = volume
    metadata = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "1", **meta}
    metadata["annotations"] = notes
    status = {"phase": "Bound" if bound else "Pending"}
    return msgspec.convert({"metadata": metadata, "spec": spec, "status": status}, PersistentVolumeClaim)


def storage_class(
    name: str, mode: str | None = "WaitForFirstConsumer", provisioner: str = "", **kw: Any
) -> StorageClass:
    body: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner, **kw}
    if mode is not None:
        body["volumeBindingMode"] = mode
    return msgspec.convert(body, StorageClass)


def csinode(name: str, **limits: int | None) -> CSINode:
    drivers = [
        {"name": driver.replace("_", "."), **({"allocatable": {"count": n}} if n is not None else {})}
        for driver, n in limits.items()
    ]
    return msgspec.convert({"metadata": {"name": name}, "spec": {"drivers": drivers}}, CSINode)


def claim_volume(claim: str, name: str = "v") -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}
