"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; scores by allocation.

Scoring strategies (least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go) share
resource_allocation.go's accounting (`plugins/helpers/resource_allocation.py`, BalancedAllocation's too).
Go's integer division truncates toward zero and Python's floors; they differ only for negative
operands, which only a falling RequestedToCapacityRatio shape produces (quantities are >= 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodeaffinity import is_qualified_name
from kubesched.core.nodetable import BoolColumn, IntColumn
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_CHANGE, POD_DELETE, POD_UPDATE, ClusterEventWithHint
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    CycleState,
    FilterPlugin,
    Handle,
    NodeBatch,
    ScorePlugin,
    SignFragments,
    SignPlugin,
)
from kubesched.framework.status import Code, Status, Verdicts
from kubesched.plugins.helpers.resource_allocation import (
    ResourceSpec,
    default_resources,
    is_extended_resource,
    is_scalar_resource,
    scored_resources,
)

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_CUSTOM_PRIORITY_SCORE = 10
TOO_MANY_PODS = "Too many pods"


class UtilizationShapePoint(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    utilization: int = 0
    score: int = 0


class RequestedToCapacityRatioParam(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    shape: list[UtilizationShapePoint] = []


class ScoringStrategy(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    type: str = ""
    resources: list[ResourceSpec] = []
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


class NodeResourcesFitArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    ignored_resources: list[str] = []
    ignored_resource_groups: list[str] = []
    scoring_strategy: ScoringStrategy | None = None


def validate_shape(shape: Sequence[UtilizationShapePoint], path: str) -> list[str]:
    if not shape:
        return [f"{path}: Required value: at least one point must be specified"]
    errors = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            where = f"{path}[{i}].utilization"
            errors.append(f"{where}: Invalid value: {shape[i].utilization}: values must be sorted in increasing order")
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            errors.append(f"{path}[{i}].utilization: Invalid value: {point.utilization}: not in valid range [0, 100]")
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                f"{path}[{i}].score: Invalid value: {point.score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    return errors


def _validate(args: NodeResourcesFitArgs, strategy: ScoringStrategy, resources: list[ResourceSpec]) -> list[str]:
    """Every problem of the (defaulted) args, each with its field path (validation_pluginargs.go)."""
    errors = [
        f'ignoredResources[{i}]: Invalid value: "{name}": must be a qualified name'
        for i, name in enumerate(args.ignored_resources)
        if not is_qualified_name(name)
    ]
    for i, group in enumerate(args.ignored_resource_groups):
        where = f'ignoredResourceGroups[{i}]: Invalid value: "{group}"'
        if "/" in group:
            errors.append(f"{where}: resource group name can't contain '/'")
        if not is_qualified_name(group):
            errors.append(f"{where}: must be a qualified name")
    if strategy.type not in STRATEGIES:
        supported = ", ".join(f'"{s}"' for s in STRATEGIES)
        errors.append(f'scoringStrategy.type: Unsupported value: "{strategy.type}": supported values: {supported}')
    errors += [
        f"scoringStrategy.resources[{i}].weight: Invalid value: {r.weight}: "
        f"resource weight of {r.name} not in valid range (0, 100]"
        for i, r in enumerate(resources)
        if not 0 < r.weight <= 100
    ]
    ratio = strategy.requested_to_capacity_ratio
    if ratio is not None:
        errors += validate_shape(ratio.shape, "scoringStrategy.requestedToCapacityRatio.shape")
    elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        errors.append(f"scoringStrategy.requestedToCapacityRatio: Required value: needed by type {strategy.type}")
    return errors


def tdiv(a: IntColumn, b: int) -> IntColumn:
    """Go's integer division by a positive ``b``: truncates toward zero where Python's // floors."""
    q: IntColumn = np.abs(a) // b
    return np.where(a < 0, -q, q)


# One scored resource for a batch: allocatable, requested (with the pod), weight.
Part = tuple[IntColumn, IntColumn, int]


def least_allocated(n: int, parts: Sequence[Part]) -> IntColumn:
    """Weighted mean of (A - Q)·100/A, 0 where Q > A; resources with A = 0 are left out."""
    total: IntColumn = np.zeros(n, dtype=np.int64)
    weights: IntColumn | int = 0
    for alloc, req, weight in parts:
        # Clamping makes Q > A score 0, and rows with A = 0 score 0 too (they only stay out of the weights).
        part = alloc - req
        np.maximum(part, 0, out=part)
        part *= MAX_NODE_SCORE
        if alloc.all():  # the usual case: every row counts, the weights stay one number
            part //= alloc
            weights = weights + weight
        else:
            counted = alloc != 0
            part //= np.where(counted, alloc, 1)
            weights = weights + counted * weight
        if weight != 1:
            part *= weight
        total += part
    if isinstance(weights, int):
        return total // max(weights, 1)
    return total // np.maximum(weights, 1)  # no counted resource: 0


def least_allocated_one(parts: Sequence[tuple[int, int, int]]) -> int:
    """`least_allocated` of one node from (allocatable, requested, weight) ints."""
    total = weights = 0
    for alloc, req, weight in parts:
        if alloc:
            total += max(alloc - req, 0) * MAX_NODE_SCORE // alloc * weight
            weights += weight
    return total // weights if weights else 0


def most_allocated_one(parts: Sequence[tuple[int, int, int]]) -> int:
    """`most_allocated` of one node from (allocatable, requested, weight) ints."""
    total = weights = 0
    for alloc, req, weight in parts:
        if alloc:
            total += min(req, alloc) * MAX_NODE_SCORE // alloc * weight
            weights += weight
    return total // weights if weights else 0


def most_allocated(n: int, parts: Sequence[Part]) -> IntColumn:
    """Weighted mean of min(Q, A)·100/A; resources with A = 0 are left out."""
    total, weights = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for alloc, req, weight in parts:
        counted = alloc != 0
        total += np.minimum(req, alloc) * MAX_NODE_SCORE // np.where(counted, alloc, 1) * weight
        weights += counted * weight
    return total // np.maximum(weights, 1)  # no counted resource: 0


@dataclass(frozen=True)
class Shape:
    """A broken linear function of utilization, scores already scaled to 0-100 (helper.BuildBrokenLinearFunction)."""

    points: tuple[tuple[int, int], ...]

    def __call__(self, utilization: IntColumn) -> IntColumn:
        pts = self.points
        out = np.full(len(utilization), pts[-1][1], dtype=np.int64)
        # Walk the points backwards so the first point at or above the utilization wins.
        for i in range(len(pts) - 1, -1, -1):
            if i == 0:
                value: IntColumn | int = pts[0][1]
            else:
                (u0, s0), (u1, s1) = pts[i - 1], pts[i]
                value = s0 + tdiv((s1 - s0) * (utilization - u0), u1 - u0)
            out = np.where(utilization <= pts[i][0], value, out)
        return out


def requested_to_capacity_ratio(shape: Shape) -> Callable[[int, Sequence[Part]], IntColumn]:
    def scorer(n: int, parts: Sequence[Part]) -> IntColumn:
        """round(Σ f(u)·w / Σ w) over resources with f(u) > 0, u = Q·100/A (100 when Q > A)."""
        total, weights = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        for alloc, req, weight in parts:
            counted = alloc != 0
            used = np.where(req > alloc, 100, req * 100 // np.where(counted, alloc, 1))
            score = shape(used)
            counted &= score > 0
            total += np.where(counted, score * weight, 0)
            weights += counted * weight
        # math.Round of a non-negative ratio: half away from zero, exactly in integers; 0 without weights.
        rounded: IntColumn = (2 * total + weights) // (2 * np.maximum(weights, 1))
        return rounded

    return scorer


class NodeResourcesFit(FilterPlugin, ScorePlugin, SignPlugin):
    """Filter: pods count and every requested resource fit; Score: the configured scoring strategy.

    Upstream's PreFilter and PreScore only precompute the pod's request vector (PodInfo holds it) and
    never reject or skip once sidecars are GA, so they are not separate steps here.
    """

    name: ClassVar[str] = "NodeResourcesFit"
    node_fields = NodeFields(resources=None)
    Args: ClassVar[type | None] = NodeResourcesFitArgs
    default_weight: ClassVar[int] = 1

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or changed, if the pod now fits it; a pod gone or resized down in place (the
        scheduler sends a pod update only then; upstream: Pod Delete|UpdatePodScaleDown, Node
        Add|UpdateNodeAllocatable)."""
        return [
            ClusterEventWithHint(POD_DELETE),
            ClusterEventWithHint(POD_UPDATE),
            ClusterEventWithHint(NODE_CHANGE, self.passes_node),
        ]

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Handle | None = None) -> None:
        args = args or NodeResourcesFitArgs()
        super().__init__(args, handle)
        strategy = args.scoring_strategy or ScoringStrategy(type=LEAST_ALLOCATED)
        resources = default_resources(strategy.resources)
        errors = _validate(args, strategy, resources)
        if errors:
            raise ValueError("; ".join(errors))
        self.resources = tuple((r.name, r.weight) for r in resources)
        self.names = tuple(r.name for r in resources)
        self.weights = dict(self.resources)
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        # Key of the checked requests in PodInfo.cache: plugins with the same ignore lists share it.
        self._memo = f"#{self.name}:{sorted(self.ignored)}:{sorted(self.ignored_groups)}"
        self.scorer: Callable[[int, Sequence[Part]], IntColumn]
        # The same formula for one node in plain ints; RequestedToCapacityRatio has none (numpy then).
        self.scorer_one: Callable[[Sequence[tuple[int, int, int]]], int] | None = None
        if strategy.type == LEAST_ALLOCATED:
            self.scorer, self.scorer_one = least_allocated, least_allocated_one
        elif strategy.type == MOST_ALLOCATED:
            self.scorer, self.scorer_one = most_allocated, most_allocated_one
        else:
            shape = strategy.requested_to_capacity_ratio.shape if strategy.requested_to_capacity_ratio else []
            scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
            self.scorer = requested_to_capacity_ratio(Shape(tuple((p.utilization, p.score * scale) for p in shape)))

    def _ignored(self, name: str) -> bool:
        # Only extended resources can be ignored; cpu, memory and hugepages are always checked.
        return is_extended_resource(name) and (name in self.ignored or name.split("/", 1)[0] in self.ignored_groups)

    def checked_requests(self, pod: PodInfo) -> list[tuple[str, int]]:
        """The pod's non-zero requests Filter checks, in upstream's order (scalars sorted by name)."""
        first = [(n, pod.requests.get(n, 0)) for n in ("cpu", "memory", "ephemeral-storage")]
        scalars = sorted((n, q) for n, q in pod.requests.items() if is_scalar_resource(n) and not self._ignored(n))
        return [(n, q) for n, q in first + scalars if q > 0]

    def _checks(self, pod: PodInfo) -> tuple[tuple[str, int], ...]:
        """("pods", 1) then the checked requests, computed once per pod (every attempt reads them)."""
        checks = pod.cache.get(self._memo)
        if checks is None:
            checks = pod.cache[self._memo] = (("pods", 1), *self.checked_requests(pod))
        return checks  # type: ignore[return-value]

    def sign(self, pod: PodInfo) -> SignFragments:
        return (("resources", pod.requests_key),)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        table, rows = nodes.table, nodes.rows
        checks = self._checks(pod)
        if len(rows) == 1:
            # One node (a nominated or hinted one): plain ints beat numpy's per-call cost.
            row = int(rows[0])
            free_at = table.free_at
            if all(free_at(name, row) >= request for name, request in checks):
                return Verdicts.all_pass(1)
        # Fast path: one comparison per resource against the free columns the table keeps current.
        short = table.free("pods")[rows] < 1
        for name, request in checks[1:]:
            short |= table.free(name)[rows] < request
        if not short.any():
            return Verdicts.all_pass(len(rows))
        masks: list[tuple[str, BoolColumn, BoolColumn | None]] = [(TOO_MANY_PODS, table.free("pods")[rows] < 1, None)]
        for name, request in checks[1:]:
            # Exceeding the whole allocatable cannot be cured by preemption: unresolvable.
            lacking = table.free(name)[rows] < request
            masks.append((f"Insufficient {name}", lacking, request > table.allocatable(name)[rows]))
        return combine(masks, len(rows))

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        if len(nodes) == 1 and self.scorer_one is not None:
            table, row = nodes.table, int(nodes.rows[0])
            one = [
                (table.allocatable_at(name, row), table.requested_at(used, row) + amount, self.weights[name])
                for name, used, amount in scored_resources(pod, self.names, use_requested=False)
            ]
            return np.array([self.scorer_one(one)], dtype=np.int64)
        table, rows = nodes.table, nodes.rows
        parts = [
            (table.allocatable(name)[rows], table.requested(used)[rows] + amount, self.weights[name])
            for name, used, amount in scored_resources(pod, self.names, use_requested=False)
        ]
        return self.scorer(len(nodes), parts)


def combine(checks: Sequence[tuple[str, BoolColumn, BoolColumn | None]], n: int) -> Verdicts:
    """One status per distinct set of failed checks, listing their reasons in check order.

    A node fails UnschedulableAndUnresolvable when some failed check's third mask is True there.
    """
    key = np.zeros(n, dtype=np.int64)
    unresolvable = np.zeros(n, dtype=np.bool_)
    for bit, (_, failed, beyond) in enumerate(checks):
        key |= failed.astype(np.int64) << bit
        if beyond is not None:
            unresolvable |= failed & beyond
    if not key.any():
        return Verdicts.all_pass(n)
    key |= unresolvable.astype(np.int64) << len(checks)
    distinct, inverse = np.unique(key, return_inverse=True)
    codes = np.zeros(len(distinct), dtype=np.int32)
    statuses: list[Status] = []
    for i, k in enumerate(distinct.tolist()):
        if k:
            reasons = tuple(reason for bit, (reason, _, _) in enumerate(checks) if k >> bit & 1)
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if k >> len(checks) & 1 else Code.UNSCHEDULABLE
            statuses.append(Status(code, reasons))
            codes[i] = len(statuses)
    return Verdicts(codes[inverse], statuses)
