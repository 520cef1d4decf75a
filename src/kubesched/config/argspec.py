"""kube-scheduler's in-tree plugin args as types: the fields of `kube-scheduler/config/v1/types_pluginargs.go`
(and the core/v1 types they hold), decoded strictly as kube-scheduler's codec does, and its field errors' words.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.config.duration import Duration
from kubesched.errors import FieldError, child, index

# A field's type: a scalar name, a nested object's fields, or a one-element list of the element's type.
Spec = str | Mapping[str, "Spec"] | list["Spec"]

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_RESOURCE: dict[str, Spec] = {"name": "str", "weight": "int64"}
_SHAPE_POINT: dict[str, Spec] = {"utilization": "int32", "score": "int32"}
_REQUIREMENT: dict[str, Spec] = {"key": "str", "operator": "str", "values": ["str"]}
_TERM: dict[str, Spec] = {"matchExpressions": [_REQUIREMENT], "matchFields": [_REQUIREMENT]}
_LABEL_SELECTOR: dict[str, Spec] = {"matchLabels": "map", "matchExpressions": [_REQUIREMENT]}
_SPREAD: dict[str, Spec] = {
    "maxSkew": "int32",
    "topologyKey": "str",
    "whenUnsatisfiable": "str",
    "labelSelector": _LABEL_SELECTOR,
    "minDomains": "int32",
    "nodeAffinityPolicy": "str",
    "nodeTaintsPolicy": "str",
    "matchLabelKeys": ["str"],
}
TYPE_META: dict[str, Spec] = {"apiVersion": "str", "kind": "str"}
ARGS: dict[str, Mapping[str, Spec]] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": "int32", "minCandidateNodesAbsolute": "int32"},
    "InterPodAffinity": {"hardPodAffinityWeight": "int32", "ignorePreferredTermsOfExistingPods": "bool"},
    "NodeResourcesFit": {
        "ignoredResources": ["str"],
        "ignoredResourceGroups": ["str"],
        "scoringStrategy": {
            "type": "str",
            "resources": [_RESOURCE],
            "requestedToCapacityRatio": {"shape": [_SHAPE_POINT]},
        },
    },
    "PodTopologySpread": {"defaultConstraints": [_SPREAD], "defaultingType": "str"},
    "NodeResourcesBalancedAllocation": {"resources": [_RESOURCE]},
    "VolumeBinding": {"bindTimeoutSeconds": "int64", "shape": [_SHAPE_POINT]},
    "NodeAffinity": {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_TERM]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "int32", "preference": _TERM}],
        }
    },
    "DynamicResources": {"filterTimeout": "duration", "bindingTimeout": "duration"},
}


def go(value: object) -> str:
    """A value as field.Error prints it: strings quoted, numbers bare, lists as Go's []string{...}."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[]string{" + ", ".join(go(v) for v in value) + "}"
    return str(value)


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {go(value)}: {detail}")


def unsupported(path: str, value: object, supported: Sequence[str]) -> FieldError:
    return FieldError(path, f"Unsupported value: {go(value)}: supported values: {', '.join(go(s) for s in supported)}")


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, f"Required value: {detail}" if detail else "Required value")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}")


def duplicate(path: str, value: object) -> FieldError:
    return FieldError(path, f"Duplicate value: {go(value)}")


# ---- strict decoding -------------------------------------------------------------------------------


def decode(value: object, spec: Spec, path: str, errors: list[FieldError]) -> Any:
    """``value`` checked against ``spec``: unknown fields and wrong types are errors; bad parts become None."""
    if value is None:
        return None
    if isinstance(spec, list):
        if not isinstance(value, list):
            errors.append(FieldError(path, "must be a list"))
            return None
        return [decode(v, spec[0], index(path, i), errors) for i, v in enumerate(value)]
    if isinstance(spec, Mapping):
        if not isinstance(value, Mapping):
            errors.append(FieldError(path, "must be an object"))
            return None
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if name not in spec:
                close = difflib.get_close_matches(name, list(spec), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                errors.append(FieldError(child(path, name), f"unknown field{hint}"))
                continue
            out[name] = decode(item, spec[name], child(path, name), errors)
        return out
    return _scalar(value, spec, path, errors)


def _scalar(value: object, kind: str, path: str, errors: list[FieldError]) -> Any:
    if kind in ("int32", "int64"):
        low, high = _INT32 if kind == "int32" else _INT64
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(FieldError(path, f"must be an integer (Go type {kind})"))
            return None
        if not low <= value <= high:
            errors.append(FieldError(path, f"{value} does not fit in Go type {kind}"))
            return None
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            errors.append(FieldError(path, "must be a boolean"))
            return None
        return value
    if kind == "str":
        if not isinstance(value, str):
            errors.append(FieldError(path, "must be a string"))
            return None
        return value
    if kind == "map":
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            errors.append(FieldError(path, "must be an object of strings"))
            return None
        return dict(value)
    # duration
    if not isinstance(value, str):
        errors.append(FieldError(path, 'must be a duration string such as "10s"'))
        return None
    try:
        return Duration.parse(value)
    except ValueError as err:
        errors.append(FieldError(path, str(err)))
        return None
