"""The embedded default cluster source: the objects of a cluster file (nodes, pods, and what plugins read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubesched.api.core import Namespace, Node, ObjectMeta, Pod, ReplicationController, Service, Workload
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.api.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.defaulting import DefaultingError, PriorityClass, default_pod, priority_classes
from kubesched.cluster.storage import STORAGE_KINDS, StorageError, StorageObject, read_storage
from kubesched.cluster.workloads import Workloads
from kubesched.errors import ConfigurationError


class ClusterFileError(ConfigurationError):
    """A cluster file that cannot be read; the message names the file and the item."""


def _documents(path: Path) -> list[Any]:
    try:
        text = path.read_text()
    except OSError as err:
        raise ClusterFileError(f"{path}: cannot read: {err.strerror}") from None
    try:
        if path.suffix == ".json":
            return [msgspec.json.decode(text)]
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except (msgspec.DecodeError, yaml.YAMLError) as err:
        raise ClusterFileError(
            f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML/JSON'}: {err}"
        ) from None


# A list's kind names its items' kind; "List" and plain lists do not.
_KINDS = (
    "Node",
    "Pod",
    "Namespace",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    "PriorityClass",
    *STORAGE_KINDS,
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
)
_NOT_YET = {
    "CSIDriver",
}


def _flatten(doc: Any, path: Path, where: str, kind: str | None = None) -> list[tuple[str, str | None, Any]]:
    """(where, the kind its list gives it, object) for each object of a document."""
    if isinstance(doc, list):
        return [item for i, d in enumerate(doc) for item in _flatten(d, path, f"{where}[{i}]", kind)]
    if not isinstance(doc, dict):
        raise ClusterFileError(f"{path}: {where}: expected an object or a list, got {type(doc).__name__}")
    if isinstance(doc.get("items"), list):
        list_kind = doc.get("kind")
        item_kind = list_kind[:-4] if isinstance(list_kind, str) and list_kind.endswith("List") else None
        item_kind = item_kind or None  # "List" names no kind
        return [
            item for i, d in enumerate(doc["items"]) for item in _flatten(d, path, f"{where}.items[{i}]", item_kind)
        ]
    return [(where, kind, doc)]


def _kind_of(obj: dict[str, Any], listed: str | None, path: Path, where: str) -> str:
    """The object's kind: its own, else its list's; without either, a Node unless it looks like a pod."""
    own = obj.get("kind")
    if own is not None and not isinstance(own, str):
        raise ClusterFileError(f"{path}: {where}.kind: expected a string, got {type(own).__name__}")
    if own and listed and own != listed:
        raise ClusterFileError(f"{path}: {where}: kind {own!r} in a {listed}List")
    kind = own or listed
    if kind:
        return kind
    spec = obj.get("spec")
    if isinstance(spec, dict) and "containers" in spec:
        raise ClusterFileError(
            f"{path}: {where}: no kind, and it has spec.containers: add kind: Pod (or put it in a PodList);"
            " an object without kind is read as a Node"
        )
    return "Node"


@dataclass
class ClusterFile:
    """What a cluster file holds, pods defaulted as the API server would store them."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    workloads: Workloads = field(default_factory=Workloads)
    namespaces: list[Namespace] = field(default_factory=list)  # their labels, for namespaceSelector terms
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    storage: list[StorageObject] = field(default_factory=list)  # PVs, PVCs, StorageClasses, CSINodes
    # Dynamic resource allocation (resource.k8s.io/v1). Templates are kept but nothing makes claims from
    # them: no resourceclaim controller runs, so a pod of a template waits as it would without one.
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)


def read_objects(path: Path) -> tuple[list[Node], list[Pod]]:
    """Nodes and pods of a file: a NodeList/PodList/List, a plain list, or several YAML documents.

    An object takes its kind from itself or from its list (a PodList's items are pods); one with
    neither counts as a Node (a node file needs no kinds), unless it has ``spec.containers``. The other
    kinds `read_cluster` reads are accepted and left out.
    """
    got = read_cluster(path)
    return got.nodes, got.pods


def read_cluster(path: Path) -> ClusterFile:
    """Every object of a cluster file: nodes, pods, namespaces (their labels, for namespaceSelector),
    PodDisruptionBudgets, PriorityClasses, and the Services, ReplicationControllers, ReplicaSets and
    StatefulSets PodTopologySpread's default constraints derive their selector from."""
    out = ClusterFile()
    raw_pods: list[tuple[str, dict[str, Any]]] = []
    for i, doc in enumerate(_documents(path)):
        for where, listed, obj in _flatten(doc, path, f"document {i}" if i else "$"):
            kind = _kind_of(obj, listed, path, where)
            try:
                _read_one(out, raw_pods, kind, obj, where, path)
            except msgspec.ValidationError as err:
                raise ClusterFileError(f"{path}: {where}: {err}") from None
    try:
        classes = priority_classes(out.priority_classes)
    except DefaultingError as err:
        raise ClusterFileError(f"{path}: {err}") from None
    for where, obj in raw_pods:
        try:
            out.pods.append(msgspec.convert(default_pod(obj, classes), Pod))
        except DefaultingError as err:
            raise ClusterFileError(f"{path}: {where}: {err}") from None
        except msgspec.ValidationError as err:
            raise ClusterFileError(f"{path}: {where}: {err}") from None
    return out


def _read_one(
    out: ClusterFile, raw_pods: list[tuple[str, dict[str, Any]]], kind: str, obj: Any, where: str, path: Path
) -> None:
    if kind == "Node":
        node = msgspec.convert(obj, Node)
        if not node.metadata.name:
            raise ClusterFileError(f"{path}: {where}: Node has no metadata.name")
        out.nodes.append(node)
    elif kind == "Pod":
        raw_pods.append((where, obj))
    elif kind == "Namespace":
        ns = msgspec.convert(obj, Namespace)
        if not ns.metadata.name:
            raise ClusterFileError(f"{path}: {where}: Namespace has no metadata.name")
        out.namespaces.append(ns)
    elif kind == "Service":
        out.workloads.services.upsert(msgspec.convert(obj, Service))
    elif kind == "ReplicationController":
        out.workloads.controllers.upsert(msgspec.convert(obj, ReplicationController))
    elif kind == "ReplicaSet":
        out.workloads.replica_sets.upsert(msgspec.convert(obj, Workload))
    elif kind == "StatefulSet":
        out.workloads.stateful_sets.upsert(msgspec.convert(obj, Workload))
    elif kind == "PodDisruptionBudget":
        out.pdbs.append(msgspec.convert(obj, PodDisruptionBudget))
    elif kind == "PriorityClass":
        pc = msgspec.convert(obj, _PriorityClass)
        if not pc.metadata.name:
            raise ClusterFileError(f"{path}: {where}: PriorityClass has no metadata.name")
        out.priority_classes.append(
            PriorityClass(pc.metadata.name, pc.value, pc.global_default, pc.preemption_policy or "PreemptLowerPriority")
        )
    elif kind in STORAGE_KINDS:
        try:
            out.storage.append(read_storage(kind, obj))
        except StorageError as err:
            raise ClusterFileError(f"{path}: {where}: {kind}: {err}") from None
    elif kind in _DRA:
        _read_dra(out, kind, obj, where, path)
    elif kind in _NOT_YET:
        raise ClusterFileError(
            f"{path}: {where}: kind {kind!r} is not supported yet: kubesched does not read CSIDrivers"
            " (see docs/scheduler.md, Known differences)"
        )
    else:
        expected = ", ".join(_KINDS[:-1]) + f" or {_KINDS[-1]}"
        raise ClusterFileError(f"{path}: {where}: unsupported kind {kind!r} (expected {expected})")


_DRA = {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"}


def _read_dra(out: ClusterFile, kind: str, obj: Any, where: str, path: Path) -> None:
    if kind == "DeviceClass":
        item: Any = msgspec.convert(obj, DeviceClass)
        out.device_classes.append(item)
    elif kind == "ResourceSlice":
        item = msgspec.convert(obj, ResourceSlice)
        out.resource_slices.append(item)
    elif kind == "ResourceClaim":
        item = msgspec.convert(obj, ResourceClaim)
        if not item.metadata.namespace:
            item.metadata.namespace = "default"
        if not item.metadata.uid:
            item.metadata.uid = f"file-claim-{item.metadata.namespace}-{item.metadata.name}"
        out.resource_claims.append(item)
    else:
        item = msgspec.convert(obj, ResourceClaimTemplate)
        out.claim_templates.append(item)
    if not item.metadata.name:
        raise ClusterFileError(f"{path}: {where}: {kind} has no metadata.name")


class _PriorityClass(msgspec.Struct, rename="camel"):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = ""


def load_into(cache: ClusterCache, path: Path) -> tuple[int, int]:
    """Fill the cache from a file and mark it synced; returns the numbers of nodes and pods."""
    nodes, pods = read_objects(path)
    # The cache knows pods by UID: a file's pods rarely carry one, and must not collapse into one pod.
    pods = [
        p
        if p.metadata.uid
        else msgspec.structs.replace(p, metadata=msgspec.structs.replace(p.metadata, uid=f"file-{i}"))
        for i, p in enumerate(pods)
    ]
    cache.replace_nodes(nodes)
    cache.replace_pods(pods)
    cache.tracks_pods = bool(pods)
    cache.synced.set()
    return len(nodes), len(pods)
