"""The embedded default cluster source: the objects of a cluster file (nodes, pods, and what plugins read)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from kubesched.api.core import Namespace, Node, ObjectMeta, Pod, ReplicationController, Service, Workload
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.api.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.defaulting import DefaultingError, PriorityClass, default_pod, priority_classes
from kubesched.cluster.storage import STORAGE_KINDS, StorageError, StorageObject, read_storage
from kubesched.cluster.workloads import Workloads
from kubesched.config import yamlin
from kubesched.core.quantity import QuantityError, to_milli
from kubesched.errors import ConfigurationError


class ClusterFileError(ConfigurationError):
    """A cluster file that cannot be read; the message names the file and the item."""


# Bounds on what a cluster file may cost before anything walks it. A real snapshot of 15,000 nodes and
# 150,000 pods is ~230 MiB of JSON, read in ~3 s; as YAML it is ~260 MiB, read in ~4 minutes and 11 GiB
# (docs/benchmarks.md): YAML is held to 64 MiB (~1 minute, ~3 GiB), JSON may be eight times that.
MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_YAML_BYTES = 64 * 1024 * 1024
MAX_OBJECTS = 1_000_000  # Kubernetes' tested limits are 5,000 nodes and 150,000 pods
MAX_VALUES = 50_000_000  # per YAML document, once aliases are expanded (a "billion laughs" file is small)


def _documents(path: Path) -> list[Any]:
    too_big = ClusterFileError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB, the limit of a cluster file")
    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                raise too_big
            data = f.read(MAX_FILE_BYTES + 1)  # bounded where the size is unknown too (a pipe)
    except OSError as err:
        raise ClusterFileError(f"{path}: cannot read: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise too_big
    if path.suffix == ".json" or data.lstrip()[:1] in (b"{", b"["):
        try:
            return _json(data)
        except (msgspec.DecodeError, RecursionError) as err:
            if path.suffix == ".json":
                problem = "nested too deeply" if isinstance(err, RecursionError) else str(err)
                raise ClusterFileError(f"{path}: not valid JSON: {problem}") from None
            # not JSON after all: YAML's flow style starts with a brace too
    if len(data) > MAX_YAML_BYTES:
        raise ClusterFileError(
            f"{path}: YAML larger than {MAX_YAML_BYTES >> 20} MiB, the limit of a YAML cluster file; JSON may be"
            f" up to {MAX_FILE_BYTES >> 20} MiB (kubectl get -o json, kubesched snapshot -o FILE.json)"
        )
    try:
        return yamlin.load_documents(data.decode(), max_values=MAX_VALUES)
    except UnicodeDecodeError as err:
        raise ClusterFileError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except yamlin.DocumentError as err:
        raise ClusterFileError(f"{path}: {err}") from None


class _JSONList(msgspec.Struct):
    kind: Any = None
    items: list[msgspec.Raw] | None = None


def _json(data: bytes) -> list[Any]:
    """A JSON document; a list's items are left encoded (`_take` decodes each straight into its struct)."""
    if data.lstrip()[:1] == b"[":
        return [msgspec.json.decode(data, type=list[msgspec.Raw])]
    doc = msgspec.json.decode(data, type=_JSONList)
    if doc.items is None:
        return [msgspec.json.decode(data)]
    return [{"kind": doc.kind, "items": doc.items}]


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
    """(where, the kind its list gives it, object) for each object of a document (items left encoded stay so)."""
    if isinstance(doc, msgspec.Raw):
        return [(where, kind, doc)]
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
    warnings: list[str] = field(default_factory=list)  # what was taken on trust (the CLI prints them)
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
    count = 0
    for i, doc in enumerate(_documents(path)):
        for where, listed, obj in _flatten(doc, path, f"document {i}" if i else "$"):
            count += 1
            if count > MAX_OBJECTS:
                raise ClusterFileError(f"{path}: {where}: more than {MAX_OBJECTS} objects, the limit of a cluster file")
            try:
                _take(out, raw_pods, listed, obj, where, path)
            except msgspec.ValidationError as err:
                raise ClusterFileError(f"{path}: {where}: {err}") from None
            except RecursionError:
                raise ClusterFileError(f"{path}: {where}: nested too deeply") from None
    try:
        classes = priority_classes(out.priority_classes)
    except DefaultingError as err:
        raise ClusterFileError(f"{path}: {err}") from None
    warnings: list[str] = []
    for where, obj in raw_pods:
        try:
            out.pods.append(_checked(msgspec.convert(default_pod(obj, classes, warnings), Pod), path, where))
        except DefaultingError as err:
            raise ClusterFileError(f"{path}: {where}: {err}") from None
        except msgspec.ValidationError as err:
            raise ClusterFileError(f"{path}: {where}: {err}") from None
    out.warnings += [f"{path}: {w}" for w in dict.fromkeys(warnings)]
    return out


class _HeadMeta(msgspec.Struct, rename="camel"):
    resource_version: Any = None


class _Head(msgspec.Struct):
    kind: Any = None
    metadata: _HeadMeta | None = None


N = TypeVar("N", Node, Pod)


def _checked(obj: N, path: Path, where: str) -> N:
    try:
        _quantities(obj)
    except ClusterFileError as err:
        raise ClusterFileError(f"{path}: {where}: {err}") from None
    return obj


def _quantities(obj: Node | Pod) -> None:
    """Every resource quantity of a node or a pod parses and is not negative, as kube-apiserver validates them
    (huge ones are kept: the server stores "1e9999" too, and the scheduler saturates them)."""
    maps: list[tuple[str, dict[str, str | int | float] | None]] = []
    if isinstance(obj, Node):
        maps += [("status.allocatable", obj.status.allocatable), ("status.capacity", obj.status.capacity)]
    else:
        spec = obj.spec
        maps.append(("spec.overhead", spec.overhead))
        if spec.resources is not None:
            maps += [
                ("spec.resources.requests", spec.resources.requests),
                ("spec.resources.limits", spec.resources.limits),
            ]
        for key, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
            for i, c in enumerate(containers or ()):
                if c.resources is not None:
                    at = f"spec.{key}[{i}].resources"
                    maps += [(f"{at}.requests", c.resources.requests), (f"{at}.limits", c.resources.limits)]
    for at, amounts in maps:
        for name, value in (amounts or {}).items():
            try:
                negative = to_milli(value) < 0
            except QuantityError as err:
                raise ClusterFileError(f"{at}.{name}: Invalid value: {value!r}: {err}") from None
            if negative:
                raise ClusterFileError(f"{at}.{name}: Invalid value: {value!r}: must be greater than or equal to 0")


def _take(
    out: ClusterFile, raw_pods: list[tuple[str, dict[str, Any]]], listed: str | None, obj: Any, where: str, path: Path
) -> None:
    """Read one object; nodes and stored pods left encoded are decoded straight into their struct."""
    if isinstance(obj, msgspec.Raw):
        try:
            head = msgspec.json.decode(obj, type=_Head)
        except msgspec.ValidationError:
            head = _Head()  # not an object: the plain path says what is wrong
        kind = head.kind if isinstance(head.kind, str) and head.kind else listed
        if kind in ("Node", "Pod") and (listed is None or kind == listed):
            if kind == "Node":
                node = msgspec.json.decode(obj, type=Node)
                if not node.metadata.name:
                    raise ClusterFileError(f"{path}: {where}: Node has no metadata.name")
                _checked(node, path, where)
                out.nodes.append(node)
                return
            if head.metadata is not None and head.metadata.resource_version:  # stored: taken as is
                out.pods.append(_checked(msgspec.json.decode(obj, type=Pod), path, where))
                return
        for at, of, item in _flatten(msgspec.json.decode(obj), path, where, listed):
            _read_one(out, raw_pods, _kind_of(item, of, path, at), item, at, path)
        return
    _read_one(out, raw_pods, _kind_of(obj, listed, path, where), obj, where, path)


def _read_one(
    out: ClusterFile, raw_pods: list[tuple[str, dict[str, Any]]], kind: str, obj: Any, where: str, path: Path
) -> None:
    if kind == "Node":
        node = msgspec.convert(obj, Node)
        if not node.metadata.name:
            raise ClusterFileError(f"{path}: {where}: Node has no metadata.name")
        out.nodes.append(_checked(node, path, where))
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
        pc = msgspec.convert(obj, PriorityClassObject)
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


class PriorityClassObject(msgspec.Struct, rename="camel", omit_defaults=True):
    """scheduling.k8s.io/v1 PriorityClass: what priority admission reads."""

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
