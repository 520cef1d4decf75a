"""Node types that decode only the fields a profile's plugins read.

A full-node extender request carries every node's whole object (about 7.5 KB each: images,
conditions, annotations). Decoding into a struct that declares only, say, one label and one
allocatable resource skips the rest inside msgspec, which is where a Python extender wins its time.
The restricted maps (`labels`, `allocatable`) answer ``get``, ``in`` and ``[]`` like the dicts
they stand for, so the node table reads both kinds alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from kubesched.api.core import ContainerImage, Node, Taint


@dataclass(frozen=True)
class NodeFields:
    """What of a Node some code reads. ``None`` for labels/resources means every key."""

    labels: frozenset[str] | None = frozenset()
    resources: frozenset[str] | None = frozenset()
    unschedulable: bool = False
    taints: bool = False
    images: bool = False
    declared_features: bool = False

    def union(self, other: NodeFields) -> NodeFields:
        def keys(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
            return None if a is None or b is None else a | b

        return NodeFields(
            keys(self.labels, other.labels),
            keys(self.resources, other.resources),
            self.unschedulable or other.unschedulable,
            self.taints or other.taints,
            self.images or other.images,
            self.declared_features or other.declared_features,
        )


class FieldMap(msgspec.Struct, gc=False):
    """Base of the generated label/allocatable structs: read like a dict of the declared keys."""

    def get(self, key: str, default: Any = None) -> Any:
        attr = type(self)._K2A.get(key)  # type: ignore[attr-defined]
        value = None if attr is None else getattr(self, attr)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value


def _field_map(name: str, keys: frozenset[str], value_type: Any) -> Any:
    attrs = {f"f{i}": k for i, k in enumerate(sorted(keys))}
    cls = msgspec.defstruct(name, [(a, value_type | None, None) for a in attrs], bases=(FieldMap,), rename=attrs)
    cls._K2A = {k: a for a, k in attrs.items()}  # type: ignore[attr-defined]
    return cls


def node_type(fields: NodeFields | None) -> type[Node]:
    """A struct type for Node objects that decodes only ``fields`` (the full partial Node for None)."""
    if fields is None:
        return Node
    labels: Any = dict[str, str] if fields.labels is None else _field_map("Labels", fields.labels, str)
    quantity = str | int | float
    alloc: Any = dict[str, quantity] if fields.resources is None else _field_map("Alloc", fields.resources, quantity)
    meta = msgspec.defstruct("SlimMeta", [("name", str, ""), ("labels", labels | None, None)], gc=False)
    spec_fields: list[Any] = [("unschedulable", bool, False)]
    if fields.taints:
        spec_fields.append(("taints", list[Taint] | None, None))
    spec = msgspec.defstruct("SlimSpec", spec_fields, gc=False)
    status_fields: list[Any] = [("allocatable", alloc | None, None)]
    if fields.images:
        status_fields.append(("images", list[ContainerImage] | None, None))
    if fields.declared_features:
        status_fields.append(("declared_features", list[str] | None, None))
    status = msgspec.defstruct("SlimStatus", status_fields, gc=False, rename="camel")
    # Attributes the table reads stay present (as None) even when not decoded.
    if not fields.taints:
        setattr(spec, "taints", None)  # noqa: B010
    if not fields.images:
        setattr(status, "images", None)  # noqa: B010
    if not fields.declared_features:
        setattr(status, "declared_features", None)  # noqa: B010
    node = msgspec.defstruct(
        "SlimNode",
        [
            ("metadata", meta, msgspec.field(default_factory=meta)),
            ("spec", spec, msgspec.field(default_factory=spec)),
            ("status", status, msgspec.field(default_factory=status)),
        ],
        gc=False,  # trees, never in a cycle: see api.core._K
    )
    return node  # type: ignore[return-value]
