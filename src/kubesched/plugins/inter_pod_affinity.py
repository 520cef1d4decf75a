"""InterPodAffinity: required pod affinity/anti-affinity as a filter, preferred terms as a score (v1.35.4).

PreFilter walks the existing pods once and counts matched terms per (topology key, node value):
pods matching all of the pod's required affinity terms, pods matching each of its anti-affinity
terms, and existing pods whose required anti-affinity terms match the pod. Filter is then array
lookups over the candidates. PreScore sums weights per (key, value) the same way for Score.

Namespace selectors are resolved through ``handle.cluster.namespace_labels``; without a cluster
(or for an unknown namespace) only explicit namespaces and the all-namespaces ``{}`` selector match,
and the pod's own namespace reads as unlabelled when matched against existing pods' terms.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn, NodeTable
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
from kubesched.plugins.helpers.affinity_terms import (
    Counts,
    PodTerms,
    bump,
    by_code,
    has_pod_affinity,
    node_labels,
    pod_terms,
    pods_with_affinity,
)
from kubesched.plugins.helpers.spread_constraints import lookup

ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
_SCORE_KEY = "InterPodAffinity/score"
_PODS_KEY = "InterPodAffinity/pods"


_SKIPPED = PreFilterResult(SKIP)


class InterPodAffinityArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass
class FilterState:
    """The incoming pod's terms and the three counters of PreFilter."""

    terms: PodTerms
    affinity: Counts
    anti_affinity: Counts
    existing_anti_affinity: Counts
    namespace_labels: Mapping[str, str]  # the incoming pod's namespace ({} when unknown)
    namespaces: dict[str, Mapping[str, str] | None] = field(default_factory=dict)  # lookups made so far
    # Per namespace: do all affinity terms, and each anti-affinity term, cover it.
    in_namespace: dict[str, tuple[bool, tuple[bool, ...]]] = field(default_factory=dict)

    def clone(self) -> FilterState:
        return FilterState(
            self.terms,
            dict(self.affinity),
            dict(self.anti_affinity),
            dict(self.existing_anti_affinity),
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

    @staticmethod
    def _pods_with_affinity(state: CycleState, table: NodeTable) -> list[tuple[int, PodInfo]]:
        """The pods with affinity, walked once per cycle for PreFilter and PreScore (while the table is unchanged)."""
        cached = state.get(_PODS_KEY)
        if cached is None or cached[0] != table.generation:
            cached = state[_PODS_KEY] = (table.generation, pods_with_affinity(table))
        pods: list[tuple[int, PodInfo]] = cached[1]
        return pods

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
        s = FilterState(terms, {}, {}, {}, own, namespaces)
        for row, existing in self._pods_with_affinity(state, table):
            self._count_existing(s, pod, existing, node_labels(table, row), 1)
        if terms.required_affinity or terms.required_anti_affinity:
            count = self._count_incoming
            for row in table.rows().tolist():
                pods = table.pods_on(row)
                if pods:
                    labels = node_labels(table, row)
                    for existing in pods.values():
                        count(s, existing, labels, 1)
        if not s.existing_anti_affinity and not terms.required_affinity and not terms.required_anti_affinity:
            return PreFilterResult(SKIP)
        state[self.name] = s
        return PreFilterResult()

    def _count_existing(
        self, s: FilterState, pod: PodInfo, existing: PodInfo, labels: Mapping[str, str], delta: int
    ) -> None:
        """Existing pod's required anti-affinity terms matching the incoming pod."""
        for term in pod_terms(existing).required_anti_affinity:
            if term.matches(pod, s.namespace_labels):
                bump(s.existing_anti_affinity, labels, term.topology_key, delta)

    def _count_incoming(self, s: FilterState, existing: PodInfo, labels: Mapping[str, str], delta: int) -> None:
        """The incoming pod's required terms matched by an existing pod."""
        # Whether all affinity terms, and each anti-affinity term, cover the pod's namespace: once per namespace.
        covered = s.in_namespace.get(existing.namespace) or self._cover(s, existing.namespace)
        pod_labels = existing.labels
        affinity = s.terms.required_affinity
        if covered[0] and affinity and all(t.selector.matches(pod_labels) for t in affinity):
            for t in affinity:
                bump(s.affinity, labels, t.topology_key, delta)
        for t, ok in zip(s.terms.required_anti_affinity, covered[1], strict=True):
            if ok and t.selector.matches(pod_labels):
                bump(s.anti_affinity, labels, t.topology_key, delta)

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
                column, vocab = table.label_codes(t.topology_key)
                col = column[rows]
                has_keys &= col >= 0
                found &= lookup(by_code(s.affinity, t.topology_key, vocab), col) > 0
            # The first pod of a group with affinity to itself: nothing matches anywhere yet, and it
            # matches its own terms; it may go to any node carrying the keys.
            own = self._namespace(s.namespaces, pod.namespace)
            first = not s.affinity and all(t.matches(pod, own) for t in affinity)
            codes[~(has_keys & (found | first))] = 1
        if s.anti_affinity:
            hit = np.zeros(len(rows), dtype=np.bool_)
            for t in s.terms.required_anti_affinity:
                column, vocab = table.label_codes(t.topology_key)
                hit |= lookup(by_code(s.anti_affinity, t.topology_key, vocab), column[rows]) > 0
            codes[(codes == 0) & hit] = 2
        if s.existing_anti_affinity:
            hit = np.zeros(len(rows), dtype=np.bool_)
            for key in {k for (k, _), n in s.existing_anti_affinity.items() if n > 0}:
                column, vocab = table.label_codes(key)
                hit |= lookup(by_code(s.existing_anti_affinity, key, vocab), column[rows]) > 0
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
            labels = node_labels(table, row)
            self._count_existing(s, pod, other, labels, delta)
            self._count_incoming(s, other, labels, delta)

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
        scores: dict[str, dict[str, int]] = {}

        def add(labels: Mapping[str, str], key: str, weight: int) -> None:
            value = labels.get(key)
            if value is not None:
                per_value = scores.setdefault(key, {})
                per_value[value] = per_value.get(value, 0) + weight

        # With preferred terms of its own every pod counts; otherwise only pods that have affinity.
        pods: Iterator[tuple[int, PodInfo]]
        if preferred:
            pods = ((r, p) for r in table.rows().tolist() for p in table.pods_on(r).values())
        else:
            pods = iter(self._pods_with_affinity(state, table))
        for row, existing in pods:
            labels = node_labels(table, row)
            if not labels:
                continue
            if preferred:
                ns = self._namespace(namespaces, existing.namespace)
                for w in terms.preferred_affinity:
                    if w.term.matches(existing, ns):
                        add(labels, w.term.topology_key, w.weight)
                for w in terms.preferred_anti_affinity:
                    if w.term.matches(existing, ns):
                        add(labels, w.term.topology_key, -w.weight)
            if not has_pod_affinity(existing):
                continue
            theirs = pod_terms(existing)
            if self.hard_weight > 0:
                for t in theirs.required_affinity:
                    if t.matches(pod, own):
                        add(labels, t.topology_key, self.hard_weight)
            for w in theirs.preferred_affinity:
                if w.term.matches(pod, own):
                    add(labels, w.term.topology_key, w.weight)
            for w in theirs.preferred_anti_affinity:
                if w.term.matches(pod, own):
                    add(labels, w.term.topology_key, -w.weight)
        if not scores:
            return SKIP
        state[_SCORE_KEY] = scores
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        scores: dict[str, dict[str, int]] = state[_SCORE_KEY]
        table, rows = nodes.table, nodes.rows
        out = np.zeros(len(rows), dtype=np.int64)
        for key, per_value in scores.items():
            column, vocab = table.label_codes(key)
            out += lookup(by_code({(key, v): n for v, n in per_value.items()}, key, vocab), column[rows])
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
