"""Nodes files of `kubesched dev-cluster up --nodes-file`: Node objects, NodeLists or a compact list, checked with
field paths before anything reaches the apiserver (which checks the rest, strictly)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.core import quantity
from kubesched.core.nodeaffinity import is_label_value, is_qualified_name
from kubesched.core.quantity import QuantityError
from kubesched.errors import InputError
from kubesched.framework.registry import did_you_mean
from kubesched.testing.nodes import DEFAULT_ALLOCATABLE, node_manifest, node_status

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_NODES = 5000
MAX_ENTRIES = 1000  # labels, annotations, taints or resources of one node
MAX_PROBLEMS = 20
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
COMPACT_FIELDS = ("name", "count", "labels", "annotations", "taints", "capacity", "allocatable", "unschedulable")
NODE_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
# Resource names without a domain prefix that nodes report; anything else needs one (nvidia.com/gpu).
STANDARD_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage", "storage")
STANDARD_PREFIXES = ("hugepages-", "attachable-volumes-")


# libyaml where available: 30x faster, and it refuses deep nesting with a clear error instead of recursing.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class NodesFileError(InputError):
    """A nodes file that cannot be used; the message names the file and each bad field's path."""


@dataclass(frozen=True)
class FileNode:
    """One node of a nodes file: the object to POST (no status) and the status to write through the subresource."""

    path: str  # where it came from in the file, e.g. "nodes[2]" or "items[0]"
    manifest: dict[str, Any]
    status: dict[str, Any]

    @property
    def name(self) -> str:
        """metadata.name."""
        return str(self.manifest["metadata"]["name"])


class _Problems:
    def __init__(self, origin: str):
        self.origin = origin
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(f"{path}: {message}" if path else message)
        elif len(self.items) == MAX_PROBLEMS:
            self.items.append("... (more problems not shown)")

    def raise_if_any(self) -> None:
        if self.items:
            raise NodesFileError(f"{self.origin}: " + "\n  ".join(self.items))


def _key(path: str, key: str) -> str:
    """``path.key``, or ``path["a.b/c"]`` for keys that are not plain identifiers."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _type_name(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def _mapping(value: object, path: str, problems: _Problems, what: str = "a mapping") -> dict[str, Any] | None:
    if not isinstance(value, dict):
        problems.add(path, f"must be {what}, got {_type_name(value)}")
        return None
    if len(value) > MAX_ENTRIES:
        problems.add(path, f"has {len(value)} entries; at most {MAX_ENTRIES}")
        return None
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        problems.add(path, f"keys must be strings, got {bad[0]!r} (quote it)")
        return None
    return value


def _check_fields(doc: dict[str, Any], known: Sequence[str], path: str, problems: _Problems) -> None:
    for key in doc:
        if key not in known:
            problems.add(_key(path, key), f"unknown field{did_you_mean(key, known)} (known: {', '.join(known)})")


def _name(value: object, path: str, problems: _Problems) -> str | None:
    if not isinstance(value, str) or not value:
        problems.add(path, f"must be a non-empty string, got {_type_name(value)}")
        return None
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        problems.add(path, f"{value[:80]!r} is not a valid node name (lowercase RFC 1123 subdomain, at most 253)")
        return None
    return value


def _labels(value: object, path: str, problems: _Problems, *, annotations: bool = False) -> dict[str, str]:
    doc = _mapping(value, path, problems)
    out: dict[str, str] = {}
    for key, val in (doc or {}).items():
        where = _key(path, key)
        if not is_qualified_name(key):
            problems.add(where, "invalid key: want [prefix/]name, name at most 63 of [A-Za-z0-9-_.], alphanumeric ends")
        elif not isinstance(val, str):
            problems.add(where, f'value must be a string, got {_type_name(val)} {val!r} (quote it: "{val}")')
        elif not annotations and not is_label_value(val):
            problems.add(where, f"invalid label value {val[:80]!r}: at most 63 of [A-Za-z0-9-_.], alphanumeric ends")
        else:
            out[key] = val
    return out


def _resource_name_problem(name: str) -> str | None:
    if not is_qualified_name(name):
        return "invalid resource name"
    if "/" in name or name in STANDARD_RESOURCES or name.startswith(STANDARD_PREFIXES):
        return None
    hint = did_you_mean(name, STANDARD_RESOURCES)
    return f"unknown resource {name!r}: extended resources need a domain, e.g. 'nvidia.com/{name}'{hint}"


def _is_integer_resource(name: str) -> bool:
    """kube-apiserver's IsIntegerResourceName: pods and extended resources (whole units only)."""
    if name == "pods":
        return True
    domain = name.split("/", 1)[0] if "/" in name else ""
    native = domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return bool(domain) and not native and not name.startswith("requests.")


def _resources(value: object, path: str, problems: _Problems) -> dict[str, str] | None:
    doc = _mapping(value, path, problems)
    if doc is None:
        return None
    out: dict[str, str] = {}
    for name, amount in doc.items():
        where = _key(path, name)
        problem = _resource_name_problem(name)
        if problem:
            problems.add(where, problem)
            continue
        if isinstance(amount, bool) or not isinstance(amount, str | int | float):
            problems.add(where, f"must be a quantity such as 4, 500m or 32Gi, got {_type_name(amount)}")
            continue
        text = amount if isinstance(amount, str) else repr(amount) if isinstance(amount, float) else str(amount)
        try:
            if text != text.strip():
                raise QuantityError("surrounding spaces")
            milli = quantity.to_milli(text)
        except QuantityError:
            problems.add(where, f"{text[:40]!r} is not a quantity (e.g. 4, 500m, 32Gi)")
            continue
        if milli < 0:
            problems.add(where, f"must not be negative, got {text}")
        elif _is_integer_resource(name) and milli % 1000:
            problems.add(where, f"must be a whole number ({name} is counted in units), got {text}")
        else:
            out[name] = text
    return out


def _parse_taint_string(text: str) -> dict[str, Any] | None:
    """kubectl's ``key[=value]:Effect``."""
    head, sep, effect = text.rpartition(":")
    if not sep:
        return None
    key, _, val = head.partition("=")
    return {"key": key, "value": val, "effect": effect} if val else {"key": key, "effect": effect}


def _taints(value: object, path: str, problems: _Problems) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        problems.add(path, f"must be a list of taints, got {_type_name(value)}")
        return []
    if len(value) > MAX_ENTRIES:
        problems.add(path, f"has {len(value)} taints; at most {MAX_ENTRIES}")
        return []
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        taint = _parse_taint_string(item) if isinstance(item, str) else item
        if taint is None:
            problems.add(where, f"{item!r}: want key[=value]:Effect, e.g. 'gpu=true:NoSchedule'")
            continue
        doc = _mapping(taint, where, problems, "a taint ({key, value, effect} or 'key[=value]:Effect')")
        if doc is None:
            continue
        _check_fields(doc, ("key", "value", "effect", "timeAdded"), where, problems)
        key, val, effect = doc.get("key"), doc.get("value", ""), doc.get("effect")
        ok = True
        if not isinstance(key, str) or not is_qualified_name(key):
            problems.add(f"{where}.key", f"must be a label key such as example.com/gpu, got {key!r}")
            ok = False
        if not isinstance(val, str) or not is_label_value(val):
            problems.add(f"{where}.value", f"must be a label value (at most 63 of [A-Za-z0-9-_.]), got {val!r}")
            ok = False
        if effect not in TAINT_EFFECTS:
            hint = did_you_mean(effect, TAINT_EFFECTS) if isinstance(effect, str) else ""
            problems.add(f"{where}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}, got {effect!r}{hint}")
            ok = False
        if ok:
            pair = (str(key), str(effect))
            if pair in seen:
                problems.add(where, f"duplicate of {path}[{seen[pair]}]: taints must be unique by key and effect")
            seen[pair] = i
            out.append(dict(doc))
    return out


def _bool(value: object, path: str, problems: _Problems) -> bool:
    if not isinstance(value, bool):
        problems.add(path, f"must be true or false, got {_type_name(value)}")
        return False
    return value


def _status(name: str, capacity: dict[str, str] | None, allocatable: dict[str, str] | None) -> dict[str, Any]:
    if allocatable is None and capacity is not None:
        allocatable = dict(capacity)
    if capacity is not None and "pods" not in capacity:
        pods = (allocatable or {}).get("pods", DEFAULT_ALLOCATABLE["pods"])
        capacity = {**capacity, "pods": pods}
    return node_status(name, allocatable=allocatable, capacity=capacity)


def _compact(entry: dict[str, Any], path: str, problems: _Problems) -> list[FileNode]:
    _check_fields(entry, COMPACT_FIELDS, path, problems)
    if "name" not in entry:
        problems.add(path, "missing field 'name'")
        return []
    name = _name(entry["name"], _key(path, "name"), problems)
    count = entry.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_NODES):
        problems.add(_key(path, "count"), f"must be a whole number from 1 to {MAX_NODES}, got {count!r}")
        count = None
    labels = _labels(entry.get("labels", {}), _key(path, "labels"), problems)
    annotations = _labels(entry.get("annotations", {}), _key(path, "annotations"), problems, annotations=True)
    taints = _taints(entry.get("taints", []), _key(path, "taints"), problems)
    unschedulable = _bool(entry.get("unschedulable", False), _key(path, "unschedulable"), problems)
    capacity = _resources(entry["capacity"], _key(path, "capacity"), problems) if "capacity" in entry else None
    alloc = _resources(entry["allocatable"], _key(path, "allocatable"), problems) if "allocatable" in entry else None
    if name is None:
        return []
    names = [name] if count is None else [f"{name}-{i}" for i in range(count)]
    if count is not None and len(names[-1]) > 253:
        problems.add(_key(path, "name"), "too long once numbered (name-N must stay within 253 characters)")
        return []
    nodes = []
    for n in names:
        manifest = node_manifest(n, labels=labels, taints=taints, unschedulable=unschedulable)
        if annotations:
            manifest["metadata"]["annotations"] = dict(annotations)
        nodes.append(FileNode(path, manifest, _status(n, capacity, alloc)))
    return nodes


def _node_object(doc: dict[str, Any], path: str, problems: _Problems) -> list[FileNode]:
    """A full Node: checked where mistakes are common; the apiserver (strict field validation) checks the rest."""
    _check_fields(doc, NODE_FIELDS, path, problems)
    if doc.get("kind", "Node") != "Node" or doc.get("apiVersion", "v1") != "v1":
        problems.add(path, f"want apiVersion v1, kind Node; got {doc.get('apiVersion')!r}, {doc.get('kind')!r}")
        return []
    meta = _mapping(doc.get("metadata"), _key(path, "metadata"), problems)
    spec = _mapping(doc.get("spec", {}), _key(path, "spec"), problems) or {}
    status = _mapping(doc.get("status", {}), _key(path, "status"), problems) or {}
    if meta is None:
        return []
    mpath, spath, stpath = _key(path, "metadata"), _key(path, "spec"), _key(path, "status")
    name = _name(meta.get("name"), _key(mpath, "name"), problems)
    labels = _labels(meta.get("labels", {}), _key(mpath, "labels"), problems)
    _labels(meta.get("annotations", {}), _key(mpath, "annotations"), problems, annotations=True)
    if "taints" in spec:
        _taints(spec["taints"], _key(spath, "taints"), problems)
    if "unschedulable" in spec:
        _bool(spec["unschedulable"], _key(spath, "unschedulable"), problems)
    capacity = _resources(status["capacity"], _key(stpath, "capacity"), problems) if "capacity" in status else None
    alloc = (
        _resources(status["allocatable"], _key(stpath, "allocatable"), problems) if "allocatable" in status else None
    )
    if name is None:
        return []
    manifest = {k: copy.deepcopy(v) for k, v in doc.items() if k != "status"}
    manifest.update(apiVersion="v1", kind="Node")
    default_labels = node_manifest(name)["metadata"]["labels"]
    manifest["metadata"]["labels"] = {**default_labels, **labels}
    full = _status(name, capacity, alloc)["status"]
    given = {k: copy.deepcopy(v) for k, v in status.items() if k not in ("capacity", "allocatable")}
    return [FileNode(path, manifest, {"status": {**full, **given}})]


def _entries(doc: object, path: str, problems: _Problems) -> list[FileNode]:
    if isinstance(doc, list):
        return [n for i, item in enumerate(doc) for n in _entry(item, f"{path}[{i}]", problems)]
    if isinstance(doc, dict):
        if doc.get("kind") in ("List", "NodeList"):
            if not isinstance(doc.get("items"), list):
                problems.add(_key(path, "items"), f"must be a list, got {_type_name(doc.get('items'))}")
                return []
            return [
                n for i, item in enumerate(doc["items"]) for n in _entry(item, f"{_key(path, 'items')}[{i}]", problems)
            ]
        if "kind" in doc or "metadata" in doc:
            return _node_object(doc, path, problems)
        if "nodes" in doc and "name" not in doc:
            _check_fields(doc, ("nodes",), path, problems)
            if isinstance(doc["nodes"], list):
                return _entries(doc["nodes"], _key(path, "nodes"), problems)
            problems.add(_key(path, "nodes"), f"must be a list, got {_type_name(doc['nodes'])}")
            return []
        if "name" in doc:
            return _compact(doc, path, problems)
    problems.add(
        path or "(top level)",
        f"want a Node, a NodeList, a list of nodes or {{nodes: [...]}}, got {_type_name(doc)}",
    )
    return []


def _entry(item: object, path: str, problems: _Problems) -> list[FileNode]:
    if not isinstance(item, dict):
        problems.add(path, f"must be a node (a mapping with name, or a Node object), got {_type_name(item)}")
        return []
    if _mapping(item, path, problems) is None:
        return []
    if "kind" in item or "metadata" in item or "apiVersion" in item:
        return _node_object(item, path, problems)
    return _compact(item, path, problems)


def parse_nodes(text: str, origin: str = "the nodes file") -> list[FileNode]:
    """The nodes of a YAML or JSON nodes file (see docs/control-plane.md); raise NodesFileError naming each problem."""
    if len(text) > MAX_FILE_BYTES:
        raise NodesFileError(f"{origin}: larger than {MAX_FILE_BYTES // 2**20} MiB")
    try:
        docs = [d for d in yaml.load_all(text, Loader=_LOADER) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}:{mark.column + 1}" if mark is not None else origin
        raise NodesFileError(f"{where}: invalid YAML: {getattr(err, 'problem', None) or err}") from None
    except (RecursionError, ValueError, OverflowError) as err:  # deep nesting; impossible dates
        raise NodesFileError(f"{origin}: cannot parse: {type(err).__name__}: {str(err)[:200]}") from None
    problems = _Problems(origin)
    nodes: list[FileNode] = []
    for i, doc in enumerate(docs):
        nodes.extend(_entries(doc, f"(document {i + 1})" if len(docs) > 1 else "", problems))
        if len(nodes) > MAX_NODES:
            problems.add("", f"more than {MAX_NODES} nodes")
            break
    if not docs:
        problems.add("", "no nodes (the file is empty)")
    seen: dict[str, str] = {}
    for node in nodes:
        if node.name in seen:
            problems.add(node.path, f"node {node.name!r} is defined twice (also at {seen[node.name] or 'top level'})")
        seen.setdefault(node.name, node.path)
    problems.raise_if_any()
    return nodes


def load_nodes_file(path: Path) -> list[FileNode]:
    """parse_nodes on a file; unreadable files are NodesFileErrors too."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise NodesFileError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise NodesFileError(f"nodes file {path} does not exist") from None
    except UnicodeDecodeError as err:
        raise NodesFileError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise NodesFileError(f"cannot read nodes file {path}: {err.strerror}") from None
    return parse_nodes(text, str(path))
