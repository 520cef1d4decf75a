"""Opportunistic batching (kube-scheduler's OpportunisticBatching, KEP-5598): reuse a cycle's scores.

After a full cycle, the scored candidates other than the chosen node are kept, best first. The
next pod, if it comes right after (no other attempt between), within 500 ms, and has the same
signature, is offered the best kept node as a hint; the cycle only filters that one node and takes
it if it passes (no scoring, the rotating start index stays).

Before the hint, the node chosen last time is checked against the new pod, as v1.35.4 does; if it
rejects the pod (one pod per node), the kept order holds. If it still fits, v1.35.4 drops the kept
nodes; kubesched instead rescores that node and puts it back among them, normalizing over all of
them again: the refinement kube-scheduler adopted in v1.37 ("rescoring"), which lets batches of
small pods reuse the scores too.

Signatures (`Framework.sign`) exist only when every filtering and scoring plugin can sign the pod,
and never for a profile with extenders.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from kubesched.core.nodetable import IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState, NodeBatch
from kubesched.framework.runtime import Framework

MAX_BATCH_AGE = 0.5  # seconds (maxBatchAge)
_TIE_BITS = 30  # keys are total << 30 | random tie-breaker: one argmax picks the best, ties at random

# Results (batch_attempts_total) and flush reasons (batch_cache_flushed_total), upstream's labels.
NO_HINT, HINT_USED, HINT_NOT_USED = "no_hint", "hint_used", "hint_not_used"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_POD_NOMINATED = "pod_nominated"
FLUSH_INCOMPATIBLE = "pod_incompatible"
FLUSH_EXPIRED = "expired"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NOT_BATCHABLE = "pod_not_batchable"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_RESCORE = "rescore_error"

# (family, labels, seconds): "hint" (hinted, profile), "store" (profile,), "rescore" (profile,) (SchedulerMetrics).
BatchTiming = Callable[[str, tuple[str, ...], float], None]


def _untimed(family: str, key: tuple[str, ...], seconds: float) -> None:
    pass


@dataclass
class _Kept:
    """The candidates of the last full cycle, as columns; index ``taken`` is out (the last hint or choice)."""

    signature: Hashable
    created: float
    table: NodeTable
    names_generation: int
    rows: Rows
    raw: list[IntColumn | None]  # per Score plugin, before normalizing (None: the plugin was skipped)
    normalized: list[IntColumn | None]  # per Score plugin, after NormalizeScore
    totals: IntColumn
    keys: IntColumn
    ties: IntColumn
    taken: int
    shrunk: bool = False  # a node left since the last normalization: normalize everything again


@dataclass
class OpportunisticBatch:
    """One profile's batch state across cycles."""

    now: Callable[[], float]
    rng: np.random.Generator
    kept: _Kept | None = None
    last_cycle: int = -1
    last_chosen: str = ""
    attempts: Counter[str] = field(default_factory=Counter)
    flushes: Counter[str] = field(default_factory=Counter)
    profile: str = ""
    timing: BatchTiming = _untimed  # upstream's get_node_hint, store_schedule_results and rescore durations

    def _flush(self, reason: str) -> None:
        self.flushes[reason] += 1
        self.kept = None

    def hint(
        self, fw: Framework, state: CycleState, pod: PodInfo, table: NodeTable, signature: Hashable, cycle: int
    ) -> int | None:
        """The row to try first for ``pod``, or None (GetNodeHint)."""
        began = time.perf_counter()
        row = self._hint(fw, state, pod, table, signature, cycle)
        self.timing("hint", ("no_hint" if row is None else "hint", self.profile), time.perf_counter() - began)
        return row

    def _hint(
        self, fw: Framework, state: CycleState, pod: PodInfo, table: NodeTable, signature: Hashable, cycle: int
    ) -> int | None:
        kept = self.kept
        row = self._usable(kept, pod, table, signature, cycle) if kept is not None else None
        if kept is None or row is None:
            self.attempts[NO_HINT] += 1
            return None
        # The node chosen last: if it rejects this pod, the kept order holds; if not, it competes again.
        if fw.passes(state, pod, table, row):
            began = time.perf_counter()
            rescored = self._rescore(fw, state, pod, table, kept)
            self.timing("rescore", (self.profile,), time.perf_counter() - began)
            if not rescored:
                self._flush(FLUSH_RESCORE)
                self.attempts[NO_HINT] += 1
                return None
        else:
            self._drop_taken(kept)
            if not len(kept.rows):
                self._flush(FLUSH_EMPTY_LIST)
                self.attempts[NO_HINT] += 1
                return None
        best = int(kept.keys.argmax())
        kept.taken = best
        return int(kept.rows[best])

    def _usable(self, kept: _Kept, pod: PodInfo, table: NodeTable, signature: Hashable, cycle: int) -> int | None:
        """The row of the node chosen last, if the kept state applies to this pod; else flush it."""
        if cycle != self.last_cycle + 1:
            self._flush(FLUSH_POD_SKIPPED)  # another attempt (a failure, another profile) came between
        elif pod.pod.status.nominated_node_name:
            return None  # the nominated node goes first; the state stays for the pods after it
        elif signature is None or signature != kept.signature:
            self._flush(FLUSH_INCOMPATIBLE)
        elif self.now() - kept.created > MAX_BATCH_AGE:
            self._flush(FLUSH_EXPIRED)
        elif (
            kept.table is not table
            or kept.names_generation != table.names_generation
            or self.last_chosen not in table.index
        ):
            self._flush(FLUSH_NODE_MISSING)  # rows may now hold other nodes
        elif kept.taken < 0 or int(kept.rows[kept.taken]) != table.index[self.last_chosen]:
            self._flush(FLUSH_NODE_MISSING)  # the node chosen last is not the one taken from the kept ones
        else:
            return table.index[self.last_chosen]
        return None

    def _drop_taken(self, kept: _Kept) -> None:
        keep = np.ones(len(kept.rows), dtype=np.bool_)
        keep[kept.taken] = False
        kept.rows, kept.keys, kept.ties, kept.totals = (
            kept.rows[keep],
            kept.keys[keep],
            kept.ties[keep],
            kept.totals[keep],
        )
        kept.raw = [None if r is None else r[keep] for r in kept.raw]
        kept.normalized = [None if r is None else r[keep] for r in kept.normalized]
        kept.taken = -1
        kept.shrunk = True

    def _rescore(self, fw: Framework, state: CycleState, pod: PodInfo, table: NodeTable, kept: _Kept) -> bool:
        """Fresh raw scores for the taken node, then NormalizeScore over all kept nodes where it can change.

        A plugin without a NormalizeScore of its own changes the taken node's total only; one with it
        is normalized over all kept nodes again when the taken node's raw score moved or a node left.
        False when the plugins skip differently than in the full cycle (the kept scores do not apply).
        """
        t = kept.taken
        scratch = state.clone()  # PreScore's writes stay out of the pod's own state
        everything = NodeBatch(table, kept.rows)
        fw.run_pre_score(scratch, pod, everything)
        fresh = fw.run_score(scratch, pod, NodeBatch(table, kept.rows[t : t + 1]), normalize=False)  # raw only
        again: list[IntColumn | None] = list(kept.normalized)
        renormalize = False
        for i, (column, new) in enumerate(zip(kept.raw, fresh.raw, strict=True)):
            normalized = kept.normalized[i]
            if column is None or new is None or normalized is None:
                if column is not None or new is not None:
                    return False
                continue
            value, old = int(new[0]), int(column[t])
            column[t] = value
            if not fw.normalizes[i] and MIN_NODE_SCORE <= value <= MAX_NODE_SCORE:
                normalized[t] = value  # no NormalizeScore of its own: the raw score, in range
            elif not fw.normalizes[i] or kept.shrunk or value != old:
                # NormalizeScore over all kept nodes again (out of range: the framework's check says so).
                again[i] = None
                renormalize = True
        kept.shrunk = False
        if renormalize:
            scores = fw.run_score(scratch, pod, everything, raw=kept.raw, normalized=again)
            kept.normalized, kept.totals = scores.normalized, scores.totals
            kept.keys = kept.totals << _TIE_BITS | kept.ties
        else:  # the weights alone: every column given, no plugin runs
            one = [None if c is None else c[t : t + 1] for c in kept.raw]
            kept_one = [None if c is None else c[t : t + 1] for c in kept.normalized]
            total = int(fw.run_score(scratch, pod, NodeBatch(table, kept.rows[t : t + 1]), one, kept_one).totals[0])
            kept.totals[t] = total
            kept.keys[t] = total << _TIE_BITS | int(kept.ties[t])
        return True

    def store(
        self,
        signature: Hashable | None,
        hinted: int | None,
        chosen: int,
        table: NodeTable,
        cycle: int,
        scored: tuple[Rows, list[IntColumn | None], list[IntColumn | None], IntColumn, int] | None,
    ) -> None:
        """Remember a cycle's choice and, after a full cycle, its scored candidates (StoreScheduleResults).

        ``scored``: the candidates' rows, raw and normalized scores per plugin, totals (before any
        extender's), and the index of the chosen one.
        """
        began = time.perf_counter()
        self._store(signature, hinted, chosen, table, cycle, scored)
        self.timing("store", (self.profile,), time.perf_counter() - began)

    def _store(
        self,
        signature: Hashable | None,
        hinted: int | None,
        chosen: int,
        table: NodeTable,
        cycle: int,
        scored: tuple[Rows, list[IntColumn | None], list[IntColumn | None], IntColumn, int] | None,
    ) -> None:
        self.last_cycle = cycle
        self.last_chosen = table.names[chosen]
        if hinted is not None and hinted == chosen:
            self.attempts[HINT_USED] += 1
            return
        if hinted is not None:
            self.attempts[HINT_NOT_USED] += 1
        if signature is None or scored is None or len(scored[0]) < 2:
            self._flush(FLUSH_NOT_BATCHABLE if signature is None else FLUSH_EMPTY_LIST)
            return
        rows, raw, normalized, totals, taken = scored
        ties = self.rng.integers(0, 1 << _TIE_BITS, size=len(rows), dtype=np.int64)
        self.kept = _Kept(
            signature,
            self.now(),
            table,
            table.names_generation,
            rows.copy(),
            [None if r is None else np.array(r, dtype=np.int64) for r in raw],  # copies: updated in place
            [None if r is None else np.array(r, dtype=np.int64) for r in normalized],
            totals.copy(),
            totals << _TIE_BITS | ties,
            ties,
            taken,
        )
