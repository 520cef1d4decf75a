"""The JSON Patch (RFC 6902) that turns one JSON document into another, with JSON Pointer escaping (RFC 6901).

Mutating rules edit a copy of the pod; the difference is the patch. So "add" versus "replace" follows
from whether the key was there, and escaping happens in one place.
"""

from __future__ import annotations

from typing import Any

Op = dict[str, Any]


def escape(token: str) -> str:
    """A JSON Pointer reference token: `~` first (to `~0`), then `/` (to `~1`)."""
    return token.replace("~", "~0").replace("/", "~1")


def _same(a: Any, b: Any) -> bool:
    """JSON equality: Python says True == 1 and 1 == 1.0, JSON does not, at any depth."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def diff(old: Any, new: Any, path: str = "") -> list[Op]:
    """Operations turning ``old`` into ``new``: objects key by key, lists grown at the end by `/-`, else replace."""
    if _same(old, new):
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[Op] = [{"op": "remove", "path": f"{path}/{escape(k)}"} for k in old if k not in new]
        for key, value in new.items():
            where = f"{path}/{escape(key)}"
            ops += diff(old[key], value, where) if key in old else [{"op": "add", "path": where, "value": value}]
        return ops
    if (
        isinstance(old, list)
        and isinstance(new, list)
        and len(new) > len(old)
        and all(_same(a, b) for a, b in zip(old, new, strict=False))
    ):
        return [{"op": "add", "path": f"{path}/-", "value": v} for v in new[len(old) :]]
    return [{"op": "replace", "path": path, "value": new}]
