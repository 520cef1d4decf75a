"""InterPodAffinity: required pod affinity/anti-affinity as a filter, preferred terms as a score (v1.35.4).

PreFilter counts matched terms per (topology key, node value) from the node table's pod index
(core/podindex.py: pods grouped by namespace and labels, pods with affinity by their terms, each group
counted per topology value and kept current as pods come and go): pods matching all of the pod's
required affinity terms, pods matching each of its anti-affinity terms, and existing pods whose
required anti-affinity terms match the pod, each a check per group and an array sum
(plugins/helpers/affinity_counts.py). Filter is then array lookups over the candidates. PreScore
sums weights per (key, value) the same way for Score.

Namespace selectors are resolved through ``handle.cluster.namespace_labels``; without a cluster
(or for an unknown namespace) only explicit namespaces and the all-namespaces ``{}`` selector match,
and the pod's own namespace reads as unlabelled when matched against existing pods' terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn, NodeTable
from kubesched.core.podindex import PodGroup
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
from kubesched.plugins.helpers.affinity_counts import (
    KeyCounts,
    Sums,
    any_count,
    at,
    bump_row,
    candidates,
    matching,
)
from kubesched.plugins.helpers.affinity_terms import AffinityTerm, PodTerms, pod_terms

ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
_SCORE_KEY = "InterPodAffinity/score"


_SKIPPED = PreFilterResult(SKIP)


class InterPodAffinityArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass
class FilterState:
    """The incoming pod's terms and the three counters of PreFilter."""

    terms: PodTerms
    affinity: KeyCounts  # per topology key, counts per value code (affinity_counts.py)
    anti_affinity: KeyCounts
    existing_anti_affinity: KeyCounts
    namespace_labels: Mapping[str, str]  # the incoming pod's namespace ({} when unknown)
    namespaces: dict[str, Mapping[str, str] | None] = field(default_factory=dict)  # lookups made so far
    # Per namespace: do all affinity terms, and each anti-affinity term, cover it.
    in_namespace: dict[str, tuple[bool, tuple[bool, ...]]] = field(default_factory=dict)

    def clone(self) -> FilterState:
        return FilterState(
            self.terms,
            {k: a.copy() for k, a in self.affinity.items()},
            {k: a.copy() for k, a in self.anti_affinity.items()},
            {k: a.copy() for k, a in self.existing_anti_affinity.items()},
            self.namespace_labels,
            self.namespaces,
            self.in_namespace,
        )


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, SignPlugin):
    """Filter on required (anti-)affinity, both the pod's and existing pods'; score on preferred terms."""

    name: ClassVar[str] = "InterPodAffinity"
    Args: ClassVar[type | None] = InterPodAffinityArgs
    node_fields = NodeFields(labels=None)
    default_weight: ClassVar[int] = 2

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Handle | None = None) -> None:
        args = args or InterPodAffinityArgs()
        super().__init__(args, handle)
        weight = args.hard_pod_affinity_weight
        if not 0 <= weight <= 100:
            raise ValueError(f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]")
        self.hard_weight = weight
        self.ignore_existing_preferred = args.ignore_preferred_terms_of_existing_pods
        self._statuses = (
            Status.unresolvable(ERR_REASON_AFFINITY),
            Status.unschedulable(ERR_REASON_ANTI_AFFINITY),
            Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY),
        )

    def _namespace(self, cache: dict[str, Mapping[str, str] | None], namespace: str) -> Mapping[str, str] | None:
        if namespace not in cache:
            cluster = self.handle.cluster
            cache[namespace] = None if cluster is None else cluster.namespace_labels(namespace)
        return cache[namespace]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Any node added or changed (its labels may make a domain); a pod bound, changed or gone if
        `schedulable_after_pod_change` says so (upstream: Pod All, Node Add|UpdateNodeLabel|UpdateNodeTaint)."""
        return [ClusterEventWithHint(POD_CHANGE, self.schedulable_after_pod_change), ClusterEventWithHint(NODE_CHANGE)]

    def schedulable_after_pod_change(self, pod: PodInfo, event: ClusterEvent, other: NodeInfo | PodInfo) -> bool:
        """A pod added or gone helps only if the pod's required terms match it, or it has terms of its own
        (its anti-affinity may have kept the pod out): upstream's isSchedulableAfterPodChange, coarsened."""
        if not isinstance(other, PodInfo):
            return True
        if other.has_pod_affinity:
            return True
        terms = pod_terms(pod)
        if terms.error:
            return True
        namespaces: dict[str, Mapping[str, str] | None] = {}
        labels = self._namespace(namespaces, other.namespace)
        return any(t.matches(other, labels) for t in (*terms.required_affinity, *terms.required_anti_affinity))

    def sign(self, pod: PodInfo) -> SignFragments | None:
        """Pods with terms of their own are not signable; others are matched by existing pods' terms
        through their labels and namespace (upstream signs the labels only)."""
        if pod.has_pod_affinity:
            return None
        return (("labels", tuple(sorted(pod.labels.items()))), ("namespace", pod.namespace))

    # ---- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        terms = pod_terms(pod)
        if terms.error:
            return PreFilterResult(Status.unresolvable(f"parsing pod: {terms.error}"))
        if not terms.required_affinity and not terms.required_anti_affinity and not table.has_affinity_pods():
            return _SKIPPED  # nothing to count: no terms here, no pod with terms there
        namespaces: dict[str, Mapping[str, str] | None] = {}
        own = self._namespace(namespaces, pod.namespace) or {}
        index = table.pod_index.activate()
        existing, matched, anti = Sums(), Sums(), Sums()
        # Existing pods' required anti-affinity terms matching the incoming pod, once per group of equal terms.
        for group in index.term_groups():
            for term in pod_terms(group.pod).required_anti_affinity:
                if term.matches(pod, own):
                    existing.add(table, term.topology_key, group)

        # The incoming pod's required terms matched by existing pods, once per group of equal labels.
        def namespace_of(namespace: str) -> Mapping[str, str] | None:
            return self._namespace(namespaces, namespace)

        affinity = terms.required_affinity
        if affinity:
            for label_set in candidates(index, affinity):
                for group in matching(affinity, label_set, namespace_of):
                    for t in affinity:
                        matched.add(table, t.topology_key, group)
        for t in terms.required_anti_affinity:
            for label_set in candidates(index, (t,)):
                for group in matching((t,), label_set, namespace_of):
                    anti.add(table, t.topology_key, group)
        if not existing.touched and not affinity and not terms.required_anti_affinity:
            return PreFilterResult(SKIP)
        state[self.name] = FilterState(
            terms, matched.result(table), anti.result(table), existing.result(table), own, namespaces
        )
        return PreFilterResult()

    def _count_existing(
        self, s: FilterState, pod: PodInfo, existing: PodInfo, table: NodeTable, row: int, delta: int
    ) -> None:
        """Existing pod's required anti-affinity terms matching the incoming pod."""
        for term in pod_terms(existing).required_anti_affinity:
            if term.matches(pod, s.namespace_labels):
                bump_row(s.existing_anti_affinity, table, term.topology_key, row, delta)

    def _count_incoming(self, s: FilterState, existing: PodInfo, table: NodeTable, row: int, delta: int) -> None:
        """The incoming pod's required terms matched by an existing pod."""
        # Whether all affinity terms, and each anti-affinity term, cover the pod's namespace: once per namespace.
        covered = s.in_namespace.get(existing.namespace) or self._cover(s, existing.namespace)
        pod_labels = existing.labels
        affinity = s.terms.required_affinity
        if covered[0] and affinity and all(t.selector.matches(pod_labels) for t in affinity):
            for t in affinity:
                bump_row(s.affinity, table, t.topology_key, row, delta)
        for t, ok in zip(s.terms.required_anti_affinity, covered[1], strict=True):
            if ok and t.selector.matches(pod_labels):
                bump_row(s.anti_affinity, table, t.topology_key, row, delta)

    def _cover(self, s: FilterState, namespace: str) -> tuple[bool, tuple[bool, ...]]:
        ns = self._namespace(s.namespaces, namespace)
        covered = s.in_namespace[namespace] = (
            all(t.matches_namespace(namespace, ns) for t in s.terms.required_affinity),
            tuple(t.matches_namespace(namespace, ns) for t in s.terms.required_anti_affinity),
        )
        return covered

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        s = state.get(self.name)
        if not isinstance(s, FilterState):
            error = Status.error(f'reading "PreFilter{self.name}" from cycleState: not found')
            return Verdicts(np.ones(len(nodes), dtype=np.int32), (error,))
        table, rows = nodes.table, nodes.rows
        codes = np.zeros(len(rows), dtype=np.int32)
        affinity = s.terms.required_affinity
        if affinity:
            has_keys = np.ones(len(rows), dtype=np.bool_)
            found = np.ones(len(rows), dtype=np.bool_)
            for t in affinity:
                column, _ = table.label_codes(t.topology_key)
                has_keys &= column[rows] >= 0
                found &= at(s.affinity, t.topology_key, table, rows) > 0
            # The first pod of a group with affinity to itself: nothing matches anywhere yet, and it
            # matches its own terms; it may go to any node carrying the keys.
            own = self._namespace(s.namespaces, pod.namespace)
            first = not any_count(s.affinity) and all(t.matches(pod, own) for t in affinity)
            codes[~(has_keys & (found | first))] = 1
        if any_count(s.anti_affinity):
            hit = np.zeros(len(rows), dtype=np.bool_)
            for t in s.terms.required_anti_affinity:
                hit |= at(s.anti_affinity, t.topology_key, table, rows) > 0
            codes[(codes == 0) & hit] = 2
        if any_count(s.existing_anti_affinity):
            hit = np.zeros(len(rows), dtype=np.bool_)
            for key, counts in s.existing_anti_affinity.items():
                if counts.any():
                    hit |= at(s.existing_anti_affinity, key, table, rows) > 0
            codes[(codes == 0) & hit] = 3
        return Verdicts(codes, self._statuses)

    # ---- PreFilter extensions (preemption's dry run) ---------------------------------------------

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int) -> None:
        self._update(state, pod, added, table, row, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int) -> None:
        self._update(state, pod, removed, table, row, -1)

    def _update(self, state: CycleState, pod: PodInfo, other: PodInfo, table: NodeTable, row: int, delta: int) -> None:
        s = state.get(self.name)
        if isinstance(s, FilterState):
            self._count_existing(s, pod, other, table, row, delta)
            self._count_incoming(s, other, table, row, delta)

    # ---- PreScore / Score ------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        terms = pod_terms(pod)
        preferred = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if not len(nodes) or (self.ignore_existing_preferred and not preferred):
            return SKIP
        if terms.error:
            return Status.error(f"failed to parse pod: {terms.error}")
        table = nodes.table
        if not preferred and not table.has_affinity_pods():
            return SKIP  # no preferred terms here, no pod with terms there: every score would be 0
        namespaces: dict[str, Mapping[str, str] | None] = {}
        own = self._namespace(namespaces, pod.namespace) or {}
        sums = Sums()
        index = table.pod_index.activate()

        def score_with(term: AffinityTerm, group: PodGroup, weight: int) -> None:
            sums.add(table, term.topology_key, group, weight)

        def namespace_of(namespace: str) -> Mapping[str, str] | None:
            return self._namespace(namespaces, namespace)

        # The pod's preferred terms against every existing pod, by groups of equal labels.
        for sign, weighted in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
            for w in weighted:
                for label_set in candidates(index, (w.term,)):
                    for group in matching((w.term,), label_set, namespace_of):
                        score_with(w.term, group, sign * w.weight)
        # Existing pods' terms against the pod, by groups of equal terms.
        for group in index.term_groups():
            theirs = pod_terms(group.pod)
            if self.hard_weight > 0:
                for t in theirs.required_affinity:
                    if t.matches(pod, own):
                        score_with(t, group, self.hard_weight)
            for w in theirs.preferred_affinity:
                if w.term.matches(pod, own):
                    score_with(w.term, group, w.weight)
            for w in theirs.preferred_anti_affinity:
                if w.term.matches(pod, own):
                    score_with(w.term, group, -w.weight)
        if not sums.touched:
            return SKIP
        state[_SCORE_KEY] = sums.result(table)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        scores: KeyCounts = state[_SCORE_KEY]
        table, rows = nodes.table, nodes.rows
        out = np.zeros(len(rows), dtype=np.int64)
        for key in scores:
            out += at(scores, key, table, rows)
        return out

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        """trunc(100 · (s − min) / (max − min)) in float64; all 0 when every node scores the same."""
        if not len(scores):
            return scores
        low, high = int(scores.min()), int(scores.max())
        if high == low:
            return np.zeros(len(scores), dtype=np.int64)
        out: IntColumn = (float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(high - low))).astype(
            np.int64
        )
        return out
