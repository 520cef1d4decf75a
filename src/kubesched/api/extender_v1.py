"""kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1).

The Go structs carry no JSON tags, so keys are the capitalized Go field names, every key is
always sent, and absent values are ``null``. Go decodes keys case-insensitively; `decode`
does the same by falling back to a key-normalizing path when the exact names are not there.
Embedded Node objects stay raw JSON (`msgspec.Raw`) so filter can echo them unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from kubesched.api.core import Pod
from kubesched.api.nesting import too_deep
from kubesched.errors import InputError

MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


class RawNodeList(msgspec.Struct):
    """A NodeList whose items are kept as raw JSON."""

    items: list[msgspec.Raw] | None = None


class ExtenderArgs(msgspec.Struct):
    """Request of filter and prioritize."""

    Pod: Pod | None = None
    Nodes: RawNodeList | None = None
    NodeNames: list[str] | None = None


class ExtenderFilterResult(msgspec.Struct):
    Nodes: RawNodeList | None  # the echo: extender/replies.py writes it from the request's raw items
    NodeNames: list[str] | None
    FailedNodes: dict[str, str]
    FailedAndUnresolvableNodes: dict[str, str]
    Error: str


class HostPriority(msgspec.Struct, array_like=False):
    Host: str
    Score: int


class ExtenderBindingArgs(msgspec.Struct):
    PodName: str = ""
    PodNamespace: str = ""
    PodUID: str = ""
    Node: str = ""


class ExtenderBindingResult(msgspec.Struct):
    Error: str


class MetaPod(msgspec.Struct):
    UID: str = ""


class MetaVictims(msgspec.Struct):
    Pods: list[MetaPod] | None = None
    NumPDBViolations: int = 0


class Victims(msgspec.Struct):
    Pods: list[Pod | None] | None = None
    NumPDBViolations: int = 0


class ExtenderPreemptionArgs(msgspec.Struct):
    Pod: Pod | None = None
    NodeNameToVictims: dict[str, Victims | None] | None = None
    NodeNameToMetaVictims: dict[str, MetaVictims | None] | None = None


class ExtenderPreemptionResult(msgspec.Struct):
    NodeNameToMetaVictims: dict[str, MetaVictims] | None


class WireError(InputError):
    """A request body that cannot be read as the expected type; the message names what is wrong."""


# Extender-level keys (Go field names) by lower-case spelling, for case-insensitive decoding.
_CANONICAL = {
    k.lower(): k
    for k in (
        "Pod",
        "Nodes",
        "NodeNames",
        "PodName",
        "PodNamespace",
        "PodUID",
        "Node",
        "NodeNameToVictims",
        "NodeNameToMetaVictims",
        "Pods",
        "NumPDBViolations",
        "UID",
    )
}
_VICTIM_MAPS = ("NodeNameToVictims", "NodeNameToMetaVictims")


def _canonical_keys(obj: dict[str, Any]) -> dict[str, Any]:
    return {_CANONICAL.get(k.lower(), k): v for k, v in obj.items()}


def _normalize(doc: Any) -> Any:
    """Rename extender-level keys to their Go spelling (Kubernetes objects inside are left alone)."""
    if not isinstance(doc, dict):
        return doc
    doc = _canonical_keys(doc)
    for field in _VICTIM_MAPS:
        victims = doc.get(field)
        if isinstance(victims, dict):
            fixed = {}
            for node, v in victims.items():
                if isinstance(v, dict):
                    v = _canonical_keys(v)
                    if isinstance(v.get("Pods"), list) and field == "NodeNameToMetaVictims":
                        v["Pods"] = [_canonical_keys(p) if isinstance(p, dict) else p for p in v["Pods"]]
                fixed[node] = v
            doc[field] = fixed
    return doc


T = TypeVar("T", bound=msgspec.Struct)


def _describe(err: msgspec.DecodeError, kind: str) -> WireError:
    text = str(err)
    if text.startswith("JSON is malformed") or text.startswith("Input data was truncated"):
        return WireError(f"request body is not valid JSON: {text}")
    return WireError(f"invalid {kind}: {text}")


def decode(body: bytes, kind: type[T], decoder: msgspec.json.Decoder[T], complete: Callable[[T], bool]) -> T:
    """Decode with the exact Go keys; unless ``complete`` accepts that, retry matching keys case-insensitively."""
    try:
        value = decoder.decode(body)
    except msgspec.DecodeError as err:
        raise _describe(err, kind.__name__) from None
    except RecursionError:
        raise WireError(too_deep(body)) from None
    if complete(value):
        return value
    try:
        generic = msgspec.json.decode(body)
    except msgspec.DecodeError as err:
        raise _describe(err, kind.__name__) from None
    except RecursionError:
        raise WireError(too_deep(body)) from None
    if not isinstance(generic, dict):
        raise WireError(f"invalid {kind.__name__}: expected a JSON object, got {type(generic).__name__}")
    try:
        return decoder.decode(msgspec.json.encode(_normalize(generic)))
    except msgspec.DecodeError as err:
        raise _describe(err, kind.__name__) from None
