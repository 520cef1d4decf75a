"""The embedded default cluster source: Node (and Pod) objects read from a file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubesched.api.core import Namespace, Node, Pod, ReplicationController, Service, Workload
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.workloads import Workloads


class ClusterFileError(ValueError):
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


def _flatten(doc: Any, path: Path, where: str) -> list[tuple[str, Any]]:
    if isinstance(doc, list):
        return [item for i, d in enumerate(doc) for item in _flatten(d, path, f"{where}[{i}]")]
    if not isinstance(doc, dict):
        raise ClusterFileError(f"{path}: {where}: expected an object or a list, got {type(doc).__name__}")
    if isinstance(doc.get("items"), list):
        return [item for i, d in enumerate(doc["items"]) for item in _flatten(d, path, f"{where}.items[{i}]")]
    return [(where, doc)]


def read_objects(path: Path) -> tuple[list[Node], list[Pod]]:
    """Nodes and pods of a file: a NodeList/PodList/List, a plain list, or several YAML documents.

    An object without ``kind`` counts as a Node (a node file needs no kinds). Objects that select pods
    (see `read_cluster`) are accepted and left out.
    """
    found = read_cluster(path)
    return found.nodes, found.pods


_KINDS = (
    "Node",
    "Pod",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    "Namespace",
)


@dataclass
class ClusterFile:
    """What a cluster file holds."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    # What PodTopologySpread's default constraints derive their selector from.
    workloads: Workloads = field(default_factory=Workloads)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)  # preemption spares what they protect
    namespaces: list[Namespace] = field(default_factory=list)  # their labels, for namespaceSelector terms


def read_cluster(path: Path) -> ClusterFile:
    """`read_objects`, plus the Services, ReplicationControllers, ReplicaSets, StatefulSets,
    PodDisruptionBudgets and Namespaces of the file."""
    found = ClusterFile()
    nodes, pods, workloads = found.nodes, found.pods, found.workloads
    for i, doc in enumerate(_documents(path)):
        for where, obj in _flatten(doc, path, f"document {i}" if i else "$"):
            kind = obj.get("kind", "Node")
            try:
                if kind == "Node":
                    node = msgspec.convert(obj, Node)
                    if not node.metadata.name:
                        raise ClusterFileError(f"{path}: {where}: Node has no metadata.name")
                    nodes.append(node)
                elif kind == "Pod":
                    pods.append(msgspec.convert(obj, Pod))
                elif kind == "Service":
                    workloads.services.upsert(msgspec.convert(obj, Service))
                elif kind == "ReplicationController":
                    workloads.controllers.upsert(msgspec.convert(obj, ReplicationController))
                elif kind == "ReplicaSet":
                    workloads.replica_sets.upsert(msgspec.convert(obj, Workload))
                elif kind == "StatefulSet":
                    workloads.stateful_sets.upsert(msgspec.convert(obj, Workload))
                elif kind == "PodDisruptionBudget":
                    found.pdbs.append(msgspec.convert(obj, PodDisruptionBudget))
                elif kind == "Namespace":
                    found.namespaces.append(msgspec.convert(obj, Namespace))
                else:
                    expected = ", ".join(_KINDS[:-1]) + f" or {_KINDS[-1]}"
                    raise ClusterFileError(f"{path}: {where}: unsupported kind {kind!r} (expected {expected})")
            except msgspec.ValidationError as err:
                raise ClusterFileError(f"{path}: {where}: {err}") from None
    return found


def load_into(cache: ClusterCache, path: Path) -> tuple[int, int]:
    """Fill the cache from a file and mark it synced; returns the numbers of nodes and pods."""
    nodes, pods = read_objects(path)
    cache.replace_nodes(nodes)
    cache.replace_pods(pods)
    cache.tracks_pods = bool(pods)
    cache.synced.set()
    return len(nodes), len(pods)
