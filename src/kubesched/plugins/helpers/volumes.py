"""What the volume plugins share: a pod's claims, kube-scheduler's storage helpers (component-helpers
storage/volume and storage/ephemeral), PV node affinity as a batch over node rows, and the binder's
GetBindVolumeToClaim and checkBindings (volumebinding/binder.go)."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import numpy as np

from kubesched.api.core import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, Volume
from kubesched.api.storage import ObjectReference, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.core.nodeaffinity import compile_selector
from kubesched.core.nodetable import BoolColumn, NodeTable, Rows
from kubesched.core.quantity import QuantityError, to_int
from kubesched.errors import ClusterError
from kubesched.framework.status import Status
from kubesched.framework.volumes import Volumes
from kubesched.plugins.helpers.label_selector import SelectorError
from kubesched.plugins.helpers.label_selector import compile_selector as compile_labels

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


def untracked(plugin: str) -> Status:
    """A pod with claims where no storage is tracked (no `Handle.volumes`): refused, never placed blindly."""
    return Status.unresolvable(
        f"{plugin}: PersistentVolumeClaims cannot be checked here: kubesched tracks no storage in this mode"
    )


def refusal(plugin: str, volumes: Volumes | None) -> Status:
    """Why a pod with claims is refused where ``volumes`` is None, or not listed yet."""
    if volumes is None:
        return untracked(plugin)
    return Status.unresolvable(
        f"{plugin}: waiting for the PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes to be listed"
    )


def has_volumes(pod: Pod) -> bool:
    return bool(pod.spec.volumes)


def claim_volumes(pod: Pod) -> Iterator[tuple[Volume, str, bool]]:
    """(volume, claim name, ephemeral) for each volume backed by a claim (ephemeral.VolumeClaimName)."""
    for vol in pod.spec.volumes or ():
        if vol.persistent_volume_claim is not None:
            yield vol, vol.persistent_volume_claim.claim_name, False
        elif vol.ephemeral is not None:
            yield vol, f"{pod.metadata.name}-{vol.name}", True


def not_found(name: str) -> str:
    """The API's NotFound error text, as the listers give it."""
    return f'persistentvolumeclaim "{name}" not found'


def volume_is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: None, or why the claim is not the pod's own."""
    meta = pvc.metadata
    owned = any(ref.controller and ref.uid == pod.metadata.uid for ref in meta.owner_references or ())
    if meta.namespace != pod.metadata.namespace or not owned:
        return (
            f"PVC {meta.namespace}/{meta.name} was not created for pod "
            f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
        )
    return None


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName, else ''."""
    annotations = pvc.metadata.annotations or {}
    if BETA_STORAGE_CLASS in annotations:
        return annotations[BETA_STORAGE_CLASS]
    return pvc.spec.storage_class_name or ""


def volume_class(pv: PersistentVolume) -> str:
    annotations = pv.metadata.annotations or {}
    return annotations.get(BETA_STORAGE_CLASS, pv.spec.storage_class_name)


def is_delay_binding(pvc: PersistentVolumeClaim, volumes: Volumes) -> bool:
    """IsDelayBindingMode; raises ValueError when the class has no volumeBindingMode."""
    name = claim_class(pvc)
    if not name:
        return False
    sc = volumes.storage_class(name)
    if sc is None:
        return False
    if sc.volume_binding_mode is None:
        raise ValueError(f'VolumeBindingMode not set for StorageClass "{name}"')
    return sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def is_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    return bool(pvc.spec.volume_name) and BIND_COMPLETED in (pvc.metadata.annotations or {})


def bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """IsVolumeBoundToClaim."""
    ref = pv.spec.claim_ref
    if ref is None or ref.name != pvc.metadata.name or ref.namespace != pvc.metadata.namespace:
        return False
    return not ref.uid or ref.uid == pvc.metadata.uid


def rv(obj: PersistentVolume | PersistentVolumeClaim) -> int:
    """The object's resourceVersion as a number (0 when it has none): newer objects have larger ones."""
    try:
        return int(obj.metadata.resource_version or 0)
    except ValueError:
        return 0


def storage_of(requests: dict[str, str | int | float] | None) -> int:
    """The ``storage`` quantity in bytes (0 when absent; a bad one was refused when the object was read)."""
    value = (requests or {}).get("storage")
    if value is None:
        return 0
    try:
        return to_int(value)
    except QuantityError:
        return 0


def claim_size(pvc: PersistentVolumeClaim) -> int:
    return storage_of(pvc.spec.resources.requests if pvc.spec.resources is not None else None)


def volume_size(pv: PersistentVolume) -> int:
    return storage_of(pv.spec.capacity)


def affinity_mask(pv: PersistentVolume, table: NodeTable, rows: Rows) -> BoolColumn:
    """CheckNodeAffinity over ``rows``: the PV's required node affinity (terms ORed), all rows without one."""
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return np.ones(len(rows), dtype=np.bool_)
    mask: BoolColumn = compile_selector(affinity.required).matches(table, rows)
    return mask


def topology_mask(sc: StorageClass, table: NodeTable, rows: Rows) -> BoolColumn:
    """MatchTopologySelectorTerms of a class's allowedTopologies over ``rows`` (none: every node)."""
    if not sc.allowed_topologies:
        return np.ones(len(rows), dtype=np.bool_)
    terms = [
        NodeSelectorTerm(
            match_expressions=[
                NodeSelectorRequirement(key=e.key, operator="In", values=list(e.values or ()))
                for e in term.match_label_expressions
            ]
        )
        for term in sc.allowed_topologies
        if term.match_label_expressions
    ]
    if not terms:
        return np.zeros(len(rows), dtype=np.bool_)
    mask: BoolColumn = compile_selector(NodeSelector(node_selector_terms=terms)).matches(table, rows)
    return mask


def node_independent_match(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """FindMatchingVolume's checks that do not depend on the node, for a PV not bound to this claim:
    capacity, volume mode, attributes class, not being deleted, Available, the claim's selector, class,
    access modes."""
    if pv.spec.claim_ref is not None:
        return False
    if not _common(pvc, pv):
        return False
    if pv.status.phase != "Available":
        return False
    if pvc.spec.selector is not None and not _selects(pvc, pv):
        return False
    if volume_class(pv) != claim_class(pvc):
        return False
    return set(pvc.spec.access_modes or ()) <= set(pv.spec.access_modes or ())


def prebound_candidate(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """A PV already bound to this claim, and FindMatchingVolume's checks before it is returned."""
    return bound_to_claim(pv, pvc) and _common(pvc, pv)


def _common(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    if volume_size(pv) < claim_size(pvc):
        return False
    if (pvc.spec.volume_mode or "Filesystem") != (pv.spec.volume_mode or "Filesystem"):
        return False
    if pv.spec.volume_attributes_class_name:  # kube-scheduler: only with VolumeAttributesClass matching
        if (pvc.spec.volume_attributes_class_name or "") != pv.spec.volume_attributes_class_name:
            return False
    elif pvc.spec.volume_attributes_class_name:
        return False
    return pv.metadata.deletion_timestamp is None


def _selects(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    try:
        selector = compile_labels(pvc.spec.selector)
    except SelectorError:
        return False
    return selector.matches(pv.metadata.labels or {})


class BindingUndone(ClusterError):
    """What checkBindings finds undone: the binding will not complete."""


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> PersistentVolume:
    """GetBindVolumeToClaim: the PV with its claimRef set to the claim (and bound-by-controller), or ``pv``."""
    ref = pv.spec.claim_ref
    meta = pvc.metadata
    out = pv
    if ref is None or (ref.name, ref.namespace, ref.uid) != (meta.name, meta.namespace, meta.uid):
        claim_ref = ObjectReference(
            kind="PersistentVolumeClaim",
            namespace=meta.namespace,
            name=meta.name,
            uid=meta.uid,
            api_version="v1",
            resource_version=meta.resource_version,
        )
        out = msgspec.structs.replace(out, spec=msgspec.structs.replace(out.spec, claim_ref=claim_ref))
    annotations = out.metadata.annotations or {}
    if not bound_to_claim(pv, pvc) and BOUND_BY_CONTROLLER not in annotations:
        annotations = {**annotations, BOUND_BY_CONTROLLER: "yes"}
        out = msgspec.structs.replace(out, metadata=msgspec.structs.replace(out.metadata, annotations=annotations))
    return out


def check_bindings(
    bindings: list[tuple[PersistentVolume, PersistentVolumeClaim]],
    provisions: list[PersistentVolumeClaim],
    volumes: Volumes,
    node: str,
) -> bool:
    """checkBindings: whether the PV controller finished; raises BindingUndone when it never will."""
    for pv, pvc in bindings:
        current = volumes.api_pv(pv.metadata.name)
        claim = volumes.api_pvc(pvc.metadata.namespace, pvc.metadata.name)
        if current is None or claim is None:
            raise BindingUndone("failed to check binding: the PersistentVolume or its claim is gone")
        if rv(pv) > rv(current):
            return False
        if current.spec.claim_ref is None or not current.spec.claim_ref.uid:
            raise BindingUndone(f'ClaimRef got reset for pv "{pv.metadata.name}"')
        if not is_fully_bound(claim):
            return False
    for pvc in provisions:
        claim = volumes.api_pvc(pvc.metadata.namespace, pvc.metadata.name)
        if claim is None:
            raise BindingUndone("failed to check provisioning pvc: it is gone")
        if rv(pvc) > rv(claim):
            return False
        if (claim.metadata.annotations or {}).get(SELECTED_NODE) != node:
            raise BindingUndone(f'provisioning failed for PVC "{pvc.metadata.name}"')
        if not is_fully_bound(claim):
            return False
    return True
