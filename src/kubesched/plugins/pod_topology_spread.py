"""PodTopologySpread: spread matching pods evenly over topology domains (kube-scheduler v1.35.4).

* PreFilter/Filter enforce the DoNotSchedule constraints: PreFilter counts, once per cycle, the
  matching pods of the pod's namespace per domain (label value) over the eligible nodes; Filter is
  then an array lookup per constraint: skew = count(domain) + self-match − global minimum.
* PreScore/Score rank by the ScheduleAnyway constraints: fewer matching pods in a node's domains
  scores higher, normalised as upstream's scoring.go.

Default constraints (pod without constraints of its own): their selector is derived from the
Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the pod, which the scheduler
supplies through ``handle.default_selector`` (a callable PodInfo -> LabelSelector |
None: `cluster.workloads.Workloads.default_selector` in the live scheduler). Without it, or when it
finds nothing, the derived selector is empty and, exactly as upstream does for an empty selector,
there are no default constraints: both PreFilter and PreScore skip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import BoolColumn, IntColumn, NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_CHANGE, POD_CHANGE, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    CycleState,
    FilterPlugin,
    Handle,
    NodeBatch,
    NodeInfo,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignFragments,
    SignPlugin,
)
from kubesched.framework.status import SKIP, SUCCESS, Status, Verdicts
from kubesched.plugins.helpers.label_selector import SelectorError, compile_selector
from kubesched.plugins.helpers.spread_constraints import (
    DO_NOT_SCHEDULE_ACTION,
    MAX_INT32,
    SCHEDULE_ANYWAY,
    SYSTEM,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    PodTopologySpreadArgs,
    compile_constraints,
    count_matching,
    has_all_keys,
    included,
    lookup,
    round_half_away,
    validate_args,
)

ERR_REASON = "node(s) didn't match pod topology spread constraints"
ERR_REASON_MISSING_LABEL = ERR_REASON + " (missing required label)"
_SCORE_KEY = "PodTopologySpread/score"

Codes = npt.NDArray[np.int32]


@dataclass
class FilterState:
    """Per DoNotSchedule constraint: matching pods per domain and which label value codes are domains."""

    constraints: tuple[Constraint, ...]
    counts: list[IntColumn]
    domains: list[BoolColumn]

    def clone(self) -> FilterState:
        return FilterState(self.constraints, [c.copy() for c in self.counts], [d.copy() for d in self.domains])

    def min_match(self, i: int) -> int:
        """The global minimum; 0 while there are fewer domains than minDomains."""
        domains = self.domains[i]
        n = int(domains.sum())
        if n < self.constraints[i].min_domains:
            return 0
        return int(self.counts[i][domains].min()) if n else MAX_INT32

    def add(self, i: int, code: int, delta: int) -> None:
        if code >= len(self.counts[i]):
            grow = code + 1 - len(self.counts[i])
            self.counts[i] = np.concatenate([self.counts[i], np.zeros(grow, dtype=np.int64)])
            self.domains[i] = np.concatenate([self.domains[i], np.zeros(grow, dtype=np.bool_)])
        self.counts[i][code] += delta
        self.domains[i][code] = True


@dataclass
class ScoreState:
    """Soft constraints, ignored rows (over the whole table), per-domain counts (None for hostname), weights."""

    constraints: tuple[Constraint, ...]
    ignored: BoolColumn
    counts: list[IntColumn | None]
    weights: list[float]


def domain_codes(codes: Codes, vocab: dict[str, int]) -> Codes:
    """Label value codes where an absent label reads as the value "" (slot len(vocab) unless "" is known)."""
    out: Codes = np.where(codes < 0, vocab.get("", len(vocab)), codes)
    return out


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, SignPlugin):
    """Filter on DoNotSchedule constraints, score on ScheduleAnyway ones."""

    name: ClassVar[str] = "PodTopologySpread"
    Args: ClassVar[type | None] = PodTopologySpreadArgs
    node_fields = NodeFields(labels=None, taints=True)
    default_weight: ClassVar[int] = 2

    def __init__(self, args: PodTopologySpreadArgs | None = None, handle: Handle | None = None) -> None:
        args = args or PodTopologySpreadArgs()
        if not args.defaulting_type:
            args = PodTopologySpreadArgs(args.default_constraints, SYSTEM)
        super().__init__(args, handle)
        errors = validate_args(args)
        if errors:
            raise ValueError("; ".join(errors))
        self.system_defaulted = args.defaulting_type == SYSTEM
        self.default_specs = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else tuple(args.default_constraints)
        self._missing_label = Status.unresolvable(ERR_REASON_MISSING_LABEL)
        self._skewed = Status.unschedulable(ERR_REASON)

    def sign(self, pod: PodInfo) -> SignFragments | None:
        """Signable only when no constraint applies: spreading depends on where the other pods are.

        Default constraints apply when the objects selecting the pod give a selector: asked anew for
        every pod (a Service may come or go), see `signs_statically`.
        """
        if pod.pod.spec.topology_spread_constraints:
            return None
        try:
            if self.constraints(pod, DO_NOT_SCHEDULE_ACTION) or self.constraints(pod, SCHEDULE_ANYWAY):
                return None
        except SelectorError:
            return None
        return ()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Any node added or changed (its labels may make a domain); a pod bound, changed or gone if
        `schedulable_after_pod_change` says so (upstream: Pod All, Node Add|UpdateNodeLabel|UpdateNodeTaint)."""
        return [ClusterEventWithHint(POD_CHANGE, self.schedulable_after_pod_change), ClusterEventWithHint(NODE_CHANGE)]

    def schedulable_after_pod_change(self, pod: PodInfo, event: ClusterEvent, other: NodeInfo | PodInfo) -> bool:
        """A pod added or gone helps only if it counts for one of the pod's constraints (same namespace,
        matched by the selector), as upstream's isSchedulableAfterPodChange."""
        if not isinstance(other, PodInfo):
            return True
        if other.namespace != pod.namespace:
            return False
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE_ACTION) + self.constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError:
            return True
        return not constraints or any(c.selector.matches(other.labels) for c in constraints)

    def signs_statically(self) -> bool:
        return not (self.default_specs and self.handle.default_selector is not None)

    # ---- constraints -----------------------------------------------------------------------------

    def constraints(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """The pod's own constraints of ``action``, or the defaults when it has none; raises SelectorError."""
        specs = pod.pod.spec.topology_spread_constraints
        if specs:
            key = f"PodTopologySpread/{action}"
            cached = pod.cache.get(key)
            if not isinstance(cached, tuple):
                cached = pod.cache[key] = compile_constraints(specs, pod.labels, action)
            return cached
        derive = self.handle.default_selector
        if derive is None:
            return ()  # no derived selector: empty, hence no default constraints (the hot path)
        defaults = compile_constraints(self.default_specs, pod.labels, action)
        if not defaults:
            return ()
        derived = derive(pod)
        selector = compile_selector(derived) if derived is not None else None
        if selector is None or selector.empty or selector.nothing:
            return ()  # buildDefaultConstraints: an empty derived selector means no default constraints
        return tuple(replace(c, selector=selector) for c in defaults)

    # ---- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE_ACTION)
        except SelectorError as err:
            hard = "obtaining pod's hard topology spread constraints"
            return PreFilterResult(Status.error(f"get constraints from pod: {hard}: {err}"))
        if not constraints:
            return PreFilterResult(SKIP)
        rows = table.rows()
        # Only nodes carrying every key count, each constraint further limited by its inclusion policies.
        masks = [m & has_all_keys(table, rows, constraints) for m in included(pod, constraints, table, rows)]
        union = np.logical_or.reduce(masks)
        counted = rows[union]
        per_row = count_matching(table, counted, pod.namespace, [c.selector for c in constraints])
        counts, domains = [], []
        for c, mask, n in zip(constraints, masks, per_row, strict=True):
            codes, vocab = table.label_codes(c.key)
            keep = mask[union]
            col = codes[counted[keep]]
            count = np.zeros(len(vocab), dtype=np.int64)
            np.add.at(count, col, n[keep])
            domain = np.zeros(len(vocab), dtype=np.bool_)
            domain[col] = True
            counts.append(count)
            domains.append(domain)
        state[self.name] = FilterState(constraints, counts, domains)
        return PreFilterResult()

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        s = state.get(self.name)
        if not isinstance(s, FilterState):
            error = Status.error(f'reading "PreFilter{self.name}" from cycleState: not found')
            return Verdicts(np.ones(len(nodes), dtype=np.int32), (error,))
        table, rows = nodes.table, nodes.rows
        codes = np.zeros(len(rows), dtype=np.int32)
        pending = np.ones(len(rows), dtype=np.bool_)
        # Constraint by constraint, as upstream: the first one a node fails decides its reason.
        for i, c in enumerate(s.constraints):
            col = table.label_codes(c.key)[0][rows]
            missing = pending & (col < 0)
            codes[missing] = 1
            pending &= ~missing
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = lookup(s.counts[i], col) + self_match - s.min_match(i)
            skewed = pending & (skew > c.max_skew)
            codes[skewed] = 2
            pending &= ~skewed
        return Verdicts(codes, (self._missing_label, self._skewed))

    # ---- PreFilter extensions (preemption's dry run) ---------------------------------------------

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int) -> None:
        self._update(state, pod, added, table, row, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int) -> None:
        self._update(state, pod, removed, table, row, -1)

    def _update(self, state: CycleState, pod: PodInfo, other: PodInfo, table: NodeTable, row: int, delta: int) -> None:
        """updateWithPod: unlike PreFilter's count it ignores deletion and counts for an empty selector too."""
        s = state.get(self.name)
        if not isinstance(s, FilterState) or other.namespace != pod.namespace:
            return
        one = np.array([row], dtype=np.intp)
        if not has_all_keys(table, one, s.constraints)[0]:
            return
        masks = included(pod, s.constraints, table, one)
        for i, c in enumerate(s.constraints):
            if c.selector.matches(other.labels) and masks[i][0]:
                s.add(i, int(table.label_codes(c.key)[0][row]), delta)

    # ---- PreScore / Score ------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        table, rows = nodes.table, nodes.rows
        if not len(table):
            return SKIP
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as err:
            what = "obtaining pod's soft topology spread constraints"
            return Status.error(f"calculating preScoreState: {what}: {err}")
        if not constraints:
            return SKIP
        # Only the pod's own constraints or List defaults require every key; System defaults let a
        # node without a zone still be spread by hostname (its zone then reads as "").
        require_all = bool(pod.pod.spec.topology_spread_constraints) or not self.system_defaulted
        ignored = np.zeros(table.size, dtype=np.bool_)
        if require_all:
            ignored[rows[~has_all_keys(table, rows, constraints)]] = True
        kept = rows[~ignored[rows]]
        all_rows = table.rows()
        eligible = has_all_keys(table, all_rows, constraints) if require_all else np.ones(len(all_rows), np.bool_)
        masks = included(pod, constraints, table, all_rows)
        # Weight per constraint: ln(number of domains + 2), the domains being those of the scored
        # nodes (for hostname: the scored nodes themselves).
        weights = [math.log(len(kept) + 2)] * len(constraints)
        zoned = [i for i, c in enumerate(constraints) if not c.hostname]
        for i in zoned:
            codes, vocab = table.label_codes(constraints[i].key)
            known = np.zeros(len(vocab) + 1, dtype=np.bool_)
            known[domain_codes(codes[kept], vocab)] = True
            weights[i] = math.log(int(known.sum()) + 2)
            # Pods count from every node (not only the scored ones) whose domain is one of those.
            masks[i] &= eligible & known[domain_codes(codes[all_rows], vocab)]
        counts: list[IntColumn | None] = [None] * len(constraints)  # hostname counts are per node, in Score
        if zoned:
            union = np.logical_or.reduce([masks[i] for i in zoned])
            counted = all_rows[union]
            per_row = count_matching(table, counted, pod.namespace, [constraints[i].selector for i in zoned])
            for i, n in zip(zoned, per_row, strict=True):
                codes, vocab = table.label_codes(constraints[i].key)
                keep = masks[i][union]
                count = np.zeros(len(vocab) + 1, dtype=np.int64)
                np.add.at(count, domain_codes(codes[counted[keep]], vocab), n[keep])
                counts[i] = count
        state[_SCORE_KEY] = ScoreState(constraints, ignored, counts, weights)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        s = state[_SCORE_KEY]
        table, rows = nodes.table, nodes.rows
        raw = np.zeros(len(rows), dtype=np.float64)
        on_node = iter(count_matching(table, rows, pod.namespace, [c.selector for c in s.constraints if c.hostname]))
        for c, weight, counts in zip(s.constraints, s.weights, s.counts, strict=True):
            codes, vocab = table.label_codes(c.key)
            col = codes[rows]
            # Hostname counts the node's own pods; other keys the pods of the node's domain.
            cnt = next(on_node) if counts is None else lookup(counts, domain_codes(col, vocab))
            # Same float steps as scoreForCount: cnt·weight, then + (maxSkew − 1), then summed.
            raw += np.where(col >= 0, cnt.astype(np.float64) * weight + float(c.max_skew - 1), 0.0)
        out = round_half_away(raw)
        out[s.ignored[rows]] = 0
        return out

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        """Fewer matching pods scores higher: 100·(max + min − s) / max over the nodes not ignored."""
        s: ScoreState = state[_SCORE_KEY]
        ignored = s.ignored[nodes.rows]
        out = np.zeros(len(scores), dtype=np.int64)
        kept = scores[~ignored]
        if not len(kept):
            return out
        low, high = int(kept.min()), int(kept.max())
        if high == 0:
            out[~ignored] = MAX_NODE_SCORE
        else:
            out[~ignored] = MAX_NODE_SCORE * (high + low - kept) // high
        return out
