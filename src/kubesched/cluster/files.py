"""The embedded default cluster source: Node (and Pod) objects read from a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubesched.api.core import Node, Pod, ReplicationController, Service, Workload
from kubesched.cluster.cache import ClusterCache
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
    nodes, pods, _ = read_cluster(path)
    return nodes, pods


_WORKLOADS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def read_cluster(path: Path) -> tuple[list[Node], list[Pod], Workloads]:
    """`read_objects`, plus the Services, ReplicationControllers, ReplicaSets and StatefulSets of the file
    (what PodTopologySpread's default constraints derive their selector from)."""
    nodes: list[Node] = []
    pods: list[Pod] = []
    workloads = Workloads()
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
                else:
                    expected = ", ".join(("Node", "Pod", *_WORKLOADS[:-1])) + f" or {_WORKLOADS[-1]}"
                    raise ClusterFileError(f"{path}: {where}: unsupported kind {kind!r} (expected {expected})")
            except msgspec.ValidationError as err:
                raise ClusterFileError(f"{path}: {where}: {err}") from None
    return nodes, pods, workloads


def load_into(cache: ClusterCache, path: Path) -> tuple[int, int]:
    """Fill the cache from a file and mark it synced; returns the numbers of nodes and pods."""
    nodes, pods = read_objects(path)
    cache.replace_nodes(nodes)
    cache.replace_pods(pods)
    cache.tracks_pods = bool(pods)
    cache.synced.set()
    return len(nodes), len(pods)
