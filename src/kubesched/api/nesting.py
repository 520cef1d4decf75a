"""How deeply a JSON document nests, measured in C-speed passes (for messages and limits).

msgspec decodes nested arrays and objects recursively and raises RecursionError near the
interpreter's recursion limit (about 1000 levels, less when called from deeper in the stack); the
servers turn that, and their own limits, into a 400 that names the depth.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = np.zeros(256, dtype=np.int8)
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1


def depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in ``body`` (brackets inside strings do not count)."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    return int(np.cumsum(_STEP[np.frombuffer(brackets, dtype=np.uint8)], dtype=np.int64).max())


# Measuring a whole 256 MiB body would take seconds: the first MiB is enough to say how deep it goes.
_MEASURED = 1 << 20


def too_deep(body: bytes) -> str:
    """The message for a body nested deeper than the decoder goes."""
    found = depth(body[:_MEASURED])
    at_least = "at least " if len(body) > _MEASURED else ""
    return (
        f"request body: JSON nested {at_least}{found} levels deep, deeper than the decoder's limit "
        "(about 1000 levels; Kubernetes objects need fewer than 30)"
    )


def deeper_than(value: Any, limit: int) -> bool:
    """Whether decoded JSON nests more than ``limit`` arrays and objects (walked without recursion)."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v
        if d > limit:
            return True
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return False
