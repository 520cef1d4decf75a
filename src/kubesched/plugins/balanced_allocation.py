"""NodeResourcesBalancedAllocation: favour nodes whose resource fractions stay close to each other.

The balance of a node: f_r = min(Q_r / A_r, 1) over the counted resources (real requests, A_r > 0),
std = |f_1 - f_2| / 2 for two of them, the population standard deviation for more, 0 otherwise;
balance = trunc((1 - std) * 100). Float steps follow Go's order so results match to the last bit.
v1.35 scores the balance with the pod; v1.37 the change the pod makes to it (balancedResourceScorer):
score = 50 + (50 + balance with the pod - balance without it) / 2 (`Release.balanced_allocation_scores_improvement`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeBatch,
    PreScorePlugin,
    ScorePlugin,
    SignFragments,
    SignPlugin,
)
from kubesched.framework.status import SKIP, SUCCESS, Status
from kubesched.plugins.helpers.resource_allocation import ResourceSpec, default_resources, scored_resources

FloatColumn = npt.NDArray[np.float64]


class NodeResourcesBalancedAllocationArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    resources: list[ResourceSpec] = []


def _validate(resources: list[ResourceSpec]) -> list[str]:
    errors = []
    seen: set[str] = set()
    for i, r in enumerate(resources):
        if r.name in seen:
            errors.append(f'resources[{i}].name: Duplicate value: "{r.name}"')
        seen.add(r.name)
        if r.weight != 1:
            errors.append(f"resources[{i}].weight: Invalid value: {r.weight}: must be 1")
    return errors


def balanced_score(fractions: list[tuple[FloatColumn, npt.NDArray[np.bool_] | None]], n: int) -> IntColumn:
    """Score per node from (fraction, counted) columns, one pair per configured resource, in order.

    ``counted`` None means every row counts (no allocatable of 0 among them).
    """
    if len(fractions) == 2 and fractions[0][1] is None and fractions[1][1] is None:
        # The usual case (cpu and memory, every node has both): std = |f1 - f2| / 2.
        std = fractions[0][0] - fractions[1][0]
        std /= 2
        np.abs(std, out=std)
        # 1 - std lies in [0.5, 1]: the cast truncates like Go's int64() conversion.
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    if len(fractions) < 2 and all(counted is None for _, counted in fractions):
        return np.full(n, MAX_NODE_SCORE, dtype=np.int64)  # std 0
    all_rows = np.ones(n, dtype=np.bool_)
    columns = [(frac, all_rows if counted is None else counted) for frac, counted in fractions]
    count = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    for frac, counted in columns:
        f = np.where(counted, frac, 0.0)
        # Adding 0.0 is exact, so summing every column keeps Go's order over the counted ones.
        total += f
        first = np.where(counted & (count == 0), f, first)
        second = np.where(counted & (count == 1), f, second)
        count += counted
    std = np.zeros(n, dtype=np.float64)
    std = np.where(count == 2, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        mean = total / np.maximum(count, 1)
        squares = np.zeros(n, dtype=np.float64)
        for frac, counted in columns:
            d = frac - mean
            squares += np.where(counted, d * d, 0.0)
        std = np.where(many, np.sqrt(squares / np.maximum(count, 1)), std)
    return np.trunc((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def by_improvement(with_pod: IntColumn, without_pod: IntColumn) -> IntColumn:
    """v1.37's score from the balances with and without the pod: both lie in [50, 100], so the integer division
    of a value in [0, 100] truncates as Go's does."""
    half = MAX_NODE_SCORE // 2
    out: IntColumn = half + (half + with_pod - without_pod) // 2
    return out


def balanced_score_one(fractions: list[float]) -> int:
    """`balanced_score` of one node from its counted fractions, in Python floats (the same IEEE steps)."""
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        total = 0.0
        for f in fractions:
            total += f
        mean = total / len(fractions)
        squares = 0.0
        for f in fractions:
            d = f - mean
            squares += d * d
        std = math.sqrt(squares / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin, SignPlugin):
    """PreScore skips best-effort pods (nothing requested of the configured resources); Score balances."""

    name: ClassVar[str] = "NodeResourcesBalancedAllocation"
    Args: ClassVar[type | None] = NodeResourcesBalancedAllocationArgs
    default_weight: ClassVar[int] = 1

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None) -> None:
        args = args or NodeResourcesBalancedAllocationArgs()
        super().__init__(args, handle)
        resources = default_resources(args.resources)
        errors = _validate(resources)
        if errors:
            raise ValueError("; ".join(errors))
        self.resources = tuple(r.name for r in resources)
        self.node_fields = NodeFields(resources=frozenset(self.resources))
        self.by_improvement = self.handle.release.balanced_allocation_scores_improvement

    def sign(self, pod: PodInfo) -> SignFragments:
        return (("resources", pod.requests_key),)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        # Scoring best-effort pods would pile them onto one node (kubernetes issue 129138).
        if not any(pod.requests.get(name, 0) for name in self.resources):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        if len(nodes) == 1:
            table, row = nodes.table, int(nodes.rows[0])
            fracs: list[float] = []
            before: list[float] = []
            for name, used, amount in scored_resources(pod, self.resources, use_requested=True):
                allocatable = table.allocatable_at(name, row)
                if allocatable:
                    # float64(Q) / float64(A), as Go computes it
                    requested = table.requested_at(used, row)
                    fracs.append(min(float(requested + amount) / float(allocatable), 1.0))
                    before.append(min(float(requested) / float(allocatable), 1.0))
            one = balanced_score_one(fracs)
            if self.by_improvement:
                half = MAX_NODE_SCORE // 2
                one = half + (half + one - balanced_score_one(before)) // 2
            return np.array([one], dtype=np.int64)
        fractions: list[tuple[FloatColumn, npt.NDArray[np.bool_] | None]] = []
        without: list[tuple[FloatColumn, npt.NDArray[np.bool_] | None]] = []
        table, rows = nodes.table, nodes.rows
        for name, used, amount in scored_resources(pod, self.resources, use_requested=True):
            alloc, node_req = table.allocatable(name)[rows], table.requested(used)[rows]
            req = node_req + amount
            counted = None if alloc.all() else alloc != 0
            divisor = alloc if counted is None else np.where(counted, alloc, 1)
            frac: FloatColumn = req / divisor  # float64(Q) / float64(A), as Go computes it
            np.minimum(frac, 1.0, out=frac)
            fractions.append((frac, counted))
            if self.by_improvement:
                frac0: FloatColumn = node_req / divisor
                np.minimum(frac0, 1.0, out=frac0)
                without.append((frac0, counted))
        score = balanced_score(fractions, len(nodes))
        if self.by_improvement:
            return by_improvement(score, balanced_score(without, len(nodes)))
        return score
