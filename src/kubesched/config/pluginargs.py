"""kube-scheduler's args of its in-tree plugins: decoded (`argspec.py`), defaulted and validated, per release.

From `kube-scheduler/config/v1/types_pluginargs.go` (the fields), `apis/config/v1/defaults.go` (what an absent
field becomes before it is validated) and `apis/config/validation/validation_pluginargs.go` (the rules and
their messages). Errors carry kube-scheduler's field paths and wording, e.g.
`profiles[0].pluginConfig[1].args.scoringStrategy.type: Unsupported value: "MostAlocated": supported values: ...`.
Args of plugins that are not kube-scheduler's are left to the plugin's own Args type (when it is built).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.config.argspec import ARGS, TYPE_META, decode, duplicate, forbidden, invalid, required, unsupported
from kubesched.config.duration import Duration
from kubesched.errors import FieldError, child, index
from kubesched.versions import Release

_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


# ---- the rules ---------------------------------------------------------------------------------------


def validate_args(name: str, raw: object, path: str, rel: Release) -> list[FieldError]:
    """Every problem of kube-scheduler plugin ``name``'s args at ``path`` (nothing for a plugin it does not know)."""
    spec = ARGS.get(name)
    if spec is None:
        return []
    errors: list[FieldError] = []
    args = decode(raw if raw is not None else {}, {**TYPE_META, **spec}, path, errors)
    if errors or not isinstance(args, dict):
        return errors  # kube-scheduler stops at a decoding error, before defaulting or validating
    return _RULES[name](args, path, rel)


def _i(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    return value if isinstance(value, int) else default


def _default_preemption(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    errors: list[FieldError] = []
    pct, absolute = _i(args, "minCandidateNodesPercentage", 10), _i(args, "minCandidateNodesAbsolute", 100)
    pct_path, abs_path = child(path, "minCandidateNodesPercentage"), child(path, "minCandidateNodesAbsolute")
    if not 0 <= pct <= 100:
        errors.append(invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errors.append(invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errors.append(invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"))
        errors.append(invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"))
    return errors


def _inter_pod_affinity(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    weight = _i(args, "hardPodAffinityWeight", 1)
    if not 0 <= weight <= 100:
        return [invalid(child(path, "hardPodAffinityWeight"), weight, "not in valid range [0, 100]")]
    return []


def label_name_errors(value: str, path: str) -> list[FieldError]:
    """metav1validation.ValidateLabelName: a qualified name (optional DNS-subdomain prefix and '/')."""
    prefix, sep, name = value.rpartition("/")
    problems: list[str] = []
    if value.count("/") > 1:
        problems.append("a qualified name must consist of alphanumeric characters, '-', '_' or '.'")
    else:
        if sep and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
            problems.append("prefix part must be a lowercase RFC 1123 subdomain")
        if not name or len(name) > 63 or not _LABEL_NAME.match(name):
            problems.append(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with"
                " an alphanumeric character (at most 63 characters)"
            )
    return [invalid(path, value, p) for p in problems]


def _shape(shape: list[Any] | None, path: str) -> list[FieldError]:
    points = [p for p in shape or [] if isinstance(p, dict)]
    if not points:
        return [required(path, "at least one point must be specified")]
    errors: list[FieldError] = []
    for i in range(1, len(points)):
        if _i(points[i - 1], "utilization", 0) >= _i(points[i], "utilization", 0):
            value = _i(points[i], "utilization", 0)
            errors.append(
                invalid(child(index(path, i), "utilization"), value, "values must be sorted in increasing order")
            )
            break
    for i, point in enumerate(points):
        util, score = _i(point, "utilization", 0), _i(point, "score", 0)
        if not 0 <= util <= 100:
            errors.append(invalid(child(index(path, i), "utilization"), util, "not in valid range [0, 100]"))
        if not 0 <= score <= 10:
            errors.append(invalid(child(index(path, i), "score"), score, "not in valid range [0, 10]"))
    return errors


def _node_resources_fit(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, res in enumerate(args.get("ignoredResources") or []):
        if isinstance(res, str):
            errors += label_name_errors(res, index(child(path, "ignoredResources"), i))
    for i, group in enumerate(args.get("ignoredResourceGroups") or []):
        if isinstance(group, str):
            at = index(child(path, "ignoredResourceGroups"), i)
            if "/" in group:
                errors.append(invalid(at, group, "resource group name can't contain '/'"))
            errors += label_name_errors(group, at)
    strategy = args.get("scoringStrategy")
    at = child(path, "scoringStrategy")
    if strategy is None:
        return errors  # defaulted to LeastAllocated over cpu and memory
    kind = strategy.get("type") or ""
    supported = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
    if kind not in supported:
        errors.append(unsupported(child(at, "type"), kind, supported))
    for i, res in enumerate(strategy.get("resources") or []):
        if isinstance(res, dict):
            weight = _i(res, "weight", 0) or 1  # a zero weight is defaulted to 1
            if not 0 < weight <= 100:
                message = f"resource weight of {res.get('name') or ''} not in valid range (0, 100]"
                errors.append(invalid(child(index(child(at, "resources"), i), "weight"), weight, message))
    ratio = strategy.get("requestedToCapacityRatio")
    ratio_path = child(at, "requestedToCapacityRatio")
    if not rel.fit_strategy_shape_rules:
        if ratio is not None:
            errors += _shape(ratio.get("shape"), child(ratio_path, "shape"))
    elif kind == "RequestedToCapacityRatio":
        if ratio is None:
            errors.append(required(ratio_path, "must be specified when type is RequestedToCapacityRatio"))
        else:
            errors += _shape(ratio.get("shape"), child(ratio_path, "shape"))
    elif ratio is not None:
        errors.append(forbidden(ratio_path, "must be nil when type is not RequestedToCapacityRatio"))
    return errors


def _pod_topology_spread(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    errors: list[FieldError] = []
    constraints = [c for c in args.get("defaultConstraints") or [] if isinstance(c, dict)]
    defaulting = args.get("defaultingType") or "System"
    if defaulting not in ("System", "List"):
        errors.append(unsupported(child(path, "defaultingType"), defaulting, ("System", "List")))
    elif defaulting == "System" and constraints:
        errors.append(invalid(child(path, "defaultingType"), defaulting, "when .defaultConstraints are not empty"))
    base = child(path, "defaultConstraints")
    for i, c in enumerate(constraints):
        at = index(base, i)
        skew = _i(c, "maxSkew", 0)
        if skew <= 0:
            errors.append(invalid(child(at, "maxSkew"), skew, "not in valid range (0, inf)"))
        key = c.get("topologyKey") or ""
        if not key:
            errors.append(required(child(at, "topologyKey"), "can not be empty"))
        else:
            errors += label_name_errors(key, child(at, "topologyKey"))
        action = c.get("whenUnsatisfiable") or ""
        if not action:
            errors.append(required(child(at, "whenUnsatisfiable"), "can not be empty"))
        elif action not in ("DoNotSchedule", "ScheduleAnyway"):
            errors.append(unsupported(child(at, "whenUnsatisfiable"), action, ("DoNotSchedule", "ScheduleAnyway")))
        if c.get("labelSelector") is not None:
            errors.append(
                forbidden(
                    child(at, "labelSelector"), "constraint must not define a selector, as they deduced for each pod"
                )
            )
        for other in constraints[:i]:
            if (other.get("topologyKey") or "", other.get("whenUnsatisfiable") or "") == (key, action):
                errors.append(duplicate(at, f"{{{key}, {action}}}"))
                break
    return errors


def _balanced_allocation(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, res in enumerate(args.get("resources") or []):
        if not isinstance(res, dict):
            continue
        at = index(child(path, "resources"), i)
        name = res.get("name") or ""
        if name in seen:
            errors.append(duplicate(child(at, "name"), name))
        seen.add(name)
        weight = _i(res, "weight", 0) or 1
        if weight != 1:
            errors.append(invalid(child(at, "weight"), weight, "must be 1"))
    return errors


def _volume_binding(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    errors: list[FieldError] = []
    timeout = _i(args, "bindTimeoutSeconds", 600)
    if timeout < 0:
        detail = "invalid BindTimeoutSeconds, should not be a negative value"
        errors.append(invalid(child(path, "bindTimeoutSeconds"), timeout, detail))
    shape = args.get("shape")
    if rel.storage_capacity_scoring:
        if shape:  # an empty shape is defaulted
            errors += _shape(shape, child(path, "shape"))
    elif shape is not None:
        detail = "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
        errors.append(FieldError(child(path, "shape"), f"Invalid value: {json.dumps(shape)}: {detail}"))
    return errors


def _requirements(exprs: list[Any] | None, path: str, fields: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, expr in enumerate(exprs or []):
        if not isinstance(expr, dict):
            continue
        at = index(path, i)
        op, values = expr.get("operator") or "", [v for v in expr.get("values") or [] if isinstance(v, str)]
        if fields:
            if op not in ("In", "NotIn"):
                errors.append(unsupported(child(at, "operator"), op, ("In", "NotIn")))
            elif len(values) != 1:
                errors.append(invalid(child(at, "values"), values, "must have one element"))
            continue
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            errors.append(unsupported(child(at, "operator"), op, ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")))
            continue
        errors += label_name_errors(expr.get("key") or "", child(at, "key"))
        if op in ("In", "NotIn") and not values:
            detail = "for 'in', 'notin' operators, values set can't be empty"
            errors.append(invalid(child(at, "values"), values, detail))
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append(
                invalid(child(at, "values"), values, "values set must be empty for exists and does not exist")
            )
        elif op in ("Gt", "Lt"):
            if len(values) != 1:
                detail = "for 'Gt', 'Lt' operators, exactly one value is required"
                errors.append(invalid(child(at, "values"), values, detail))
            elif not re.fullmatch(r"[-+]?[0-9]+", values[0]):
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errors.append(invalid(index(child(at, "values"), 0), values[0], detail))
    return errors


def _term(term: object, path: str) -> list[FieldError]:
    if not isinstance(term, dict):
        return []
    return _requirements(term.get("matchExpressions"), child(path, "matchExpressions"), False) + _requirements(
        term.get("matchFields"), child(path, "matchFields"), True
    )


def _node_affinity(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    affinity = args.get("addedAffinity")
    if not isinstance(affinity, dict):
        return []
    base = child(path, "addedAffinity")
    errors: list[FieldError] = []
    req = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(req, dict):
        at = child(child(base, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms")
        for i, term in enumerate(req.get("nodeSelectorTerms") or []):
            errors += _term(term, index(at, i))
    at = child(base, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, pref in enumerate(affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        if isinstance(pref, dict) and _i(pref, "weight", 0) != 0:
            errors += _term(pref.get("preference"), index(at, i))
    return errors


def _dynamic_resources(args: dict[str, Any], path: str, rel: Release) -> list[FieldError]:
    errors: list[FieldError] = []
    filter_timeout, binding_timeout = args.get("filterTimeout"), args.get("bindingTimeout")
    if isinstance(filter_timeout, Duration) and filter_timeout.nanoseconds < 0:
        errors.append(invalid(child(path, "filterTimeout"), str(filter_timeout), "must be zero or positive"))
    if binding_timeout is not None:
        if not rel.dra_binding_timeout:
            detail = "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled"
            errors.append(forbidden(child(path, "bindingTimeout"), detail))
        elif isinstance(binding_timeout, Duration) and binding_timeout.nanoseconds < 1_000_000_000:
            errors.append(invalid(child(path, "bindingTimeout"), str(binding_timeout), "must be at least 1 second"))
    return errors


_RULES: dict[str, Callable[[dict[str, Any], str, Release], list[FieldError]]] = {
    "DefaultPreemption": _default_preemption,
    "InterPodAffinity": _inter_pod_affinity,
    "NodeResourcesFit": _node_resources_fit,
    "PodTopologySpread": _pod_topology_spread,
    "NodeResourcesBalancedAllocation": _balanced_allocation,
    "VolumeBinding": _volume_binding,
    "NodeAffinity": _node_affinity,
    "DynamicResources": _dynamic_resources,
}
