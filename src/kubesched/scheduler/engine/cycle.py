"""One scheduling cycle: PreFilter, Filter, extenders, PreScore/Score, selection, Reserve, Permit.

Synchronous CPU work over the cache's NodeTable, as kube-scheduler's schedulingCycle does it:

* Filter examines nodes from a start index that rotates from cycle to cycle, and stops once
  ``numFeasibleNodesToFind`` are feasible (adaptive percentageOfNodesToScore); nodes are filtered in
  chunks of the table's rows, never one by one.
* A pod already nominated to a node (after preemption) tries that node first; if it passes, no scoring.
* Pods nominated elsewhere with at least this pod's priority count against their node while it filters.
* Extenders, when configured, are the only awaits: the table may change across them, so the nodes
  are carried by name and mapped back to rows afterwards.

The rotating Filter (`find`) is here; nominated pods and the nominated or hinted node are in search.py.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from kubesched.cluster.cache import ClusterCache
from kubesched.core.nodetable import IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.guard import FrameworkError
from kubesched.framework.interfaces import CycleState, NodeBatch, PreFilterResult
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.scheduler.engine import search
from kubesched.scheduler.engine.batch import BatchTiming, OpportunisticBatch
from kubesched.scheduler.engine.decision import Decision, Rejection
from kubesched.scheduler.engine.extenders import ExtenderError, Extenders, NoExtenders
from kubesched.scheduler.engine.nominator import Nominator

_OK = Code.SUCCESS  # an Enum member looked up once: Code.SUCCESS costs ~0.4 µs per access
log = logging.getLogger("kubesched.scheduler")
NO_NODES = "no nodes available to schedule pods"
_NOTHING = contextlib.nullcontext()
PLUGIN_METRICS_SAMPLE = 0.1  # kube-scheduler's pluginMetricsSamplePercent


def _ignore(key: tuple[str, Code, str], seconds: float) -> None:
    pass


EXTENDER = "Extender"
_max_reduce = np.maximum.reduce  # the ufunc itself: skips ndarray.max's Python wrapper
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(n: int, percentage: int, scoring: bool) -> int:
    """kube-scheduler's numFeasibleNodesToFind: all below 100 nodes, else an adaptive share, at least 100."""
    if n < MIN_FEASIBLE_NODES_TO_FIND:
        return n
    if percentage == 0:
        percentage = max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, 50 - n // 125)
    k = n * percentage // 100
    if k < MIN_FEASIBLE_NODES_TO_FIND:
        k = MIN_FEASIBLE_NODES_TO_FIND
    if not scoring:
        return 1
    return min(k, n)


@dataclass(frozen=True, slots=True)
class _Nominated:
    """The pod's nominated node passed the plugins; the filter extenders are still to be asked."""

    table: NodeTable
    rows: Rows


@dataclass(slots=True)
class _Attempt:
    """What the cycle learns about one pod on its way (private: `run` returns a frozen value)."""

    pod: PodInfo
    state: CycleState
    evaluated: int = 0
    feasible: int = 0
    extender_rejected: bool = False
    signature: Hashable | None = None  # opportunistic batching's signature of the pod, and the node hinted
    hinted: int | None = None


class Cycle:
    """The scheduling cycle over one cache; keeps the rotating start index between cycles."""

    def __init__(
        self,
        cache: ClusterCache,
        *,
        extenders: Extenders | None = None,
        nominator: Nominator | None = None,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        batching: bool = True,
        now: Callable[[], float] = time.monotonic,
        record: Callable[[tuple[str, Code, str], float], None] | None = None,
        record_plugin: Callable[[str, str, Code, float], None] | None = None,
        algorithm: Callable[[float], None] | None = None,
        batch_timing: BatchTiming | None = None,
    ) -> None:
        self.cache = cache
        # The decision's seconds (filter, score, PostFilter): scheduler_scheduling_algorithm_duration_seconds.
        self.algorithm = algorithm
        self.batch_timing = batch_timing
        self.extenders: Extenders = extenders if extenders is not None else NoExtenders()
        self.nominator = nominator if nominator is not None else Nominator()
        self.percentage = percentage_of_nodes_to_score
        self.rng = rng or random.Random()
        self.next_start = 0
        self.count = 0  # scheduling cycles so far: batching needs to know that no other came between
        # Opportunistic batching, per profile (upstream: the OpportunisticBatching feature gate).
        self.batching = batching
        self.now = now
        # ((extension point, status code, profile), seconds): kube-scheduler's extension point durations.
        self.record = record or _ignore
        # (plugin, extension point, status code, seconds), for a sample of the cycles as upstream: every
        # plugin call of the cycle and of its binding cycle (`CycleState.timer`; batch calls cover all nodes).
        self.record_plugin = record_plugin
        self._sampler = random.Random()  # not self.rng: sampling must not move the tie-breaks
        self._sample: Callable[[str, str, Code, float], None] | None = None  # this cycle's, if sampled
        self._batches: dict[str, tuple[Profile, OpportunisticBatch]] = {}
        # Set by `simulate` (records on): each scored cycle's normalized scores per Score plugin (None: the plugin
        # did not score) and the index of the chosen node among them; never set by the live scheduler.
        self.observe_scores: Callable[[Framework, list[IntColumn | None], int], None] | None = None

    def batch(self, profile: Profile) -> OpportunisticBatch | None:
        """The profile's batch state (new after a reload), or None without batching."""
        if not self.batching or profile.framework.signers is None or len(self.extenders):
            return None  # never with extenders, as upstream
        entry = self._batches.get(profile.name)
        if entry is None or entry[0] is not profile:
            batch = OpportunisticBatch(self.now, np.random.default_rng(self.rng.getrandbits(64)), profile=profile.name)
            if self.batch_timing is not None:
                batch.timing = self.batch_timing
            self._batches[profile.name] = entry = (profile, batch)
        return entry[1]

    def batch_counts(self) -> list[tuple[str, Mapping[str, int], Mapping[str, int]]]:
        """Per profile: batching's attempts by result and flushes by reason (for the metrics)."""
        return [(name, batch.attempts, batch.flushes) for name, (_, batch) in self._batches.items()]

    def sampled(self) -> bool:
        """Whether to time each plugin this once (kube-scheduler's pluginMetricsSamplePercent)."""
        return self._sampler.random() < PLUGIN_METRICS_SAMPLE

    async def run(self, profile: Profile, pod: PodInfo) -> Decision | Rejection:
        """Decide a node for ``pod`` and assume it there (a `Decision`), or say why not (a `Rejection`)."""
        self.count += 1
        self._sample = self.record_plugin if self._sampler.random() < PLUGIN_METRICS_SAMPLE else None
        at = _Attempt(pod, CycleState())
        at.state.timer = self._sample  # the binding cycle (same state) is sampled with it, as upstream
        # Every plugin's exception becomes this pod's Error status (FrameworkError, logged with its
        # traceback where it is caught): the scheduler never ends for a plugin's bug.
        began = time.perf_counter()
        try:
            try:
                found = await self._decide(profile, at)
            finally:  # the decision's seconds (filter, score, PostFilter), whatever it came to
                if self.algorithm is not None:
                    self.algorithm(time.perf_counter() - began)
            if isinstance(found, Rejection):
                return found
            return self._reserve_and_permit(profile.framework, at, found)
        except FrameworkError as err:
            return Rejection.failed(pod, at.state, err)
        except ExtenderError as err:
            return Rejection(pod, at.state, Status.error(str(err)).with_plugin(EXTENDER), str(err))
        except Exception as err:  # a bug outside any plugin: this pod's attempt fails, the scheduler goes on
            log.exception("scheduling cycle of %s failed", pod.key)
            message = f"scheduling cycle failed: {type(err).__name__}: {err}"
            return Rejection(pod, at.state, Status.error(message), message)

    async def _decide(self, profile: Profile, at: _Attempt) -> str | Rejection:
        """The node for the pod (not yet assumed), or the rejection (PostFilter run)."""
        fw, pod, state = profile.framework, at.pod, at.state
        table = self.cache.table
        total = len(table)
        if total == 0:
            return Rejection(pod, state, Status.unresolvable(NO_NODES), NO_NODES)
        diagnosis = Diagnosis()
        batch = self.batch(profile)
        found = self._search(profile, at, diagnosis, batch, try_nominated=True)
        if isinstance(found, _Nominated):
            # The filter extenders are awaited with the table as the cache has it: nominated pods are
            # counted only inside `_search`, which never awaits (another task may change the table now).
            names, rejected = await self._extender_filter(pod, found.table, found.rows, Diagnosis())
            at.extender_rejected = rejected
            row = self.cache.table.index.get(names[0]) if names else None
            if row is not None:
                return self.cache.table.names[row]
            found = self._search(profile, at, diagnosis, batch, try_nominated=False)
            assert not isinstance(found, _Nominated)  # only with try_nominated
        if isinstance(found, int):
            return self.cache.table.names[found]
        table, feasible = self.cache.table, found
        signature, hinted = at.signature, at.hinted
        at.evaluated = len(feasible) + diagnosis.rejected_count()
        if len(feasible) and self.extenders.filters(pod):
            names, rejected = await self._extender_filter(pod, table, feasible, diagnosis)
            at.extender_rejected = at.extender_rejected or rejected
            feasible = self.cache.table.rows_for(names)
            table = self.cache.table
        at.feasible = len(feasible)
        if not len(feasible):
            return self._fail(profile, at, diagnosis, total)
        if len(feasible) == 1:
            if batch is not None:
                batch.store(signature, hinted, int(feasible[0]), table, self.count, None)
            return table.names[int(feasible[0])]
        batch_of = NodeBatch(table, feasible)
        record, clock = self.record, time.perf_counter
        began = clock()
        fw.run_pre_score(state, pod, batch_of)
        scoring = clock()
        record(("PreScore", _OK, profile.name), scoring - began)
        scores = fw.run_score(state, pod, batch_of)
        totals = scores.totals
        record(("Score", _OK, profile.name), clock() - scoring)
        if self.extenders.prioritizers(pod):
            names = table.name_array()[feasible].tolist()
            extra = await self.extenders.prioritize(pod, table, feasible)
            totals = totals + np.fromiter((extra.get(n, 0) for n in names), dtype=np.int64, count=len(names))
        best = select_host(totals, self.rng)
        chosen = int(feasible[best])
        if self.observe_scores is not None:
            self.observe_scores(fw, scores.normalized, best)
        if batch is not None:
            batch.store(
                signature, hinted, chosen, table, self.count, (feasible, scores.raw, scores.normalized, totals, best)
            )
        return table.names[chosen]

    def _search(
        self,
        profile: Profile,
        at: _Attempt,
        diagnosis: Diagnosis,
        batch: OpportunisticBatch | None,
        try_nominated: bool,
    ) -> Rows | int | _Nominated:
        """PreFilter and Filter, with the nominated pods counted: the feasible rows, a row taken without
        search (the batch's hint), or the pod's nominated node that passed (the caller asks the filter
        extenders). Synchronous on purpose: the nominated pods are added to the shared table and removed
        again before anything else can run."""
        fw, pod, state = profile.framework, at.pod, at.state
        table = self.cache.table
        added: dict[int, list[PodInfo]] = {}
        record, clock = self.record, time.perf_counter
        with search.nominated_pods(self.cache, self.nominator, table, pod, added) if len(self.nominator) else _NOTHING:
            began = clock()
            pre = fw.run_pre_filter(state, pod, table)
            record(("PreFilter", pre.status.code, profile.name), clock() - began)
            if pre.status.rejected:
                diagnosis.pre_filter = pre.status
                return table.rows()[:0]
            signature: Hashable | None = None
            hinted: int | None = None
            if batch is not None:
                if self._sample is None:
                    signature = fw.sign(pod)
                else:  # upstream times Sign in sampled cycles only
                    signing = clock()
                    signature = fw.sign(pod, state.timer)
                    record(("Sign", _OK, profile.name), clock() - signing)
                hinted = batch.hint(fw, state, pod, table, signature, self.count)
            at.signature, at.hinted = signature, hinted
            # Filter over the nominated or hinted node counts as Filter, as upstream's evaluateNominatedNode.
            began = clock()
            node = (self.nominator.node_of(pod.uid) or pod.pod.status.nominated_node_name) if try_nominated else None
            if node:
                nominated = search.try_nominated(fw, state, pod, table, pre, node)
                if nominated is not None and added:
                    nominated = search.second_pass(fw, pod, table, nominated, added, Diagnosis())
                if nominated is not None and len(nominated):
                    if self.extenders.filters(pod):
                        return _Nominated(table, nominated)  # never with a batch (no batching with extenders)
                    if batch is not None:
                        batch.store(signature, hinted, int(nominated[0]), table, self.count, None)
                    record(("Filter", _OK, profile.name), clock() - began)
                    return int(nominated[0])
            if hinted is not None and search.hint_passes(fw, state, pod, table, hinted, pre, added):
                at.evaluated = at.feasible = 1
                if batch is not None:
                    batch.store(signature, hinted, hinted, table, self.count, None)
                record(("Filter", _OK, profile.name), clock() - began)
                return hinted
            feasible, self.next_start = find(
                profile, state, pod, table, pre, diagnosis, self.extenders, self.percentage, self.next_start
            )
            if added:
                feasible = search.second_pass(fw, pod, table, feasible, added, diagnosis)
            record(("Filter", _OK, profile.name), clock() - began)  # over all nodes, as upstream
        return feasible

    async def _extender_filter(
        self, pod: PodInfo, table: NodeTable, rows: Rows, diagnosis: Diagnosis
    ) -> tuple[list[str], bool]:
        """Names that pass every interested filter extender, and whether they rejected any; their
        rejections join the diagnosis."""
        names: list[str] = table.name_array()[rows].tolist()
        if not self.extenders.filters(pod):
            return names, False
        passed, statuses = await self.extenders.filter(pod, table, names)
        table = self.cache.table
        by_status: dict[Status, list[int]] = {}
        for name, status in statuses.items():
            row = table.index.get(name)
            if row is not None:
                by_status.setdefault(status, []).append(row)
        for status, failed in by_status.items():
            diagnosis.add(np.asarray(failed, dtype=np.intp), np.ones(len(failed), dtype=np.int32), (status,))
        return passed, len(passed) < len(names)

    def _fail(self, profile: Profile, at: _Attempt, diagnosis: Diagnosis, total: int) -> Rejection:
        """No feasible node: PostFilter (preemption), then kube-scheduler's FitError message."""
        plugins = diagnosis.plugins()
        if at.extender_rejected:
            plugins.add(EXTENDER)
        began = time.perf_counter()
        post = profile.framework.run_post_filter(at.state, at.pod, self.cache.table, diagnosis)
        if profile.framework.post_filter:
            self.record(("PostFilter", post.code, profile.name), time.perf_counter() - began)
        diagnosis.post_filter_message = ", ".join(post.reasons)
        message = diagnosis.message(total)
        # Rejected either way; only the message, built like kube-scheduler's FitError, is shown.
        status = Status(Code.UNSCHEDULABLE, (message,), "")
        return Rejection(
            at.pod, at.state, status, message, frozenset(plugins), post.nominated, post.plugin, None, at.evaluated, 0
        )

    def _reserve_and_permit(self, fw: Framework, at: _Attempt, node: str) -> Decision | Rejection:
        """Assume the pod on its node, then Reserve and Permit; any failure undoes it all."""
        pod, state = at.pod, at.state
        self.cache.assume(pod, node)
        self.nominator.remove(pod.uid)
        raised: FrameworkError | None = None
        waits: dict[str, float] = {}
        point = "Reserve"
        clock, profile = time.perf_counter, fw.spec.scheduler_name
        began = clock()
        try:
            status = fw.run_reserve(state, pod, node)
            permitting = clock()
            self.record((point, status.code, profile), permitting - began)
            if status.ok:
                point = "Permit"
                status, waits = fw.run_permit(state, pod, node)
                self.record((point, status.code, profile), clock() - permitting)
        except FrameworkError as err:
            raised, status = err, err.status
            self.record((point, Code.ERROR, profile), clock() - began)
        if status.code in (_OK, Code.WAIT):
            return Decision(pod, state, node, waits, at.evaluated, at.feasible)
        unreserve(fw, state, pod, node, self.record)
        self.cache.forget(pod.uid)
        message = str(raised) if raised else status.message or f"{status.plugin} rejected the pod"
        return Rejection(
            pod, state, status, message, frozenset({status.plugin}), None, None, raised, at.evaluated, at.feasible
        )


def unreserve(
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    node: str,
    record: Callable[[tuple[str, Code, str], float], None] = _ignore,
) -> None:
    """`Framework.run_unreserve`, its duration given to ``record`` (the extension point's, as upstream's)."""
    began = time.perf_counter()
    fw.run_unreserve(state, pod, node)
    record(("Unreserve", _OK, fw.spec.scheduler_name), time.perf_counter() - began)


def select_host(totals: IntColumn, rng: random.Random) -> int:
    """Index of the highest total, ties broken uniformly at random (kube-scheduler's selectHost)."""
    best = (totals == _max_reduce(totals)).nonzero()[0]
    return int(best[0]) if len(best) == 1 else int(best[rng.randrange(len(best))])


def find(
    profile: Profile,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    pre: PreFilterResult,
    diagnosis: Diagnosis,
    extenders: Extenders,
    default_percentage: int,
    next_start: int,
) -> tuple[Rows, int]:
    """Filter from the rotating start until enough nodes are feasible; the feasible rows and the next start.

    ``default_percentage`` is the configuration's percentageOfNodesToScore, for a profile that sets none.
    """
    fw = profile.framework
    rows = table.ordered_rows()  # zones interleaved, as kube-scheduler lists its snapshot's nodes
    live = len(rows)
    rows = pre.narrow(table, rows, diagnosis)
    n = len(rows)
    if n == 0:
        return rows, next_start
    percentage = profile.percentage_of_nodes_to_score
    scoring = bool(fw.score) or extenders.any_filter_or_prioritize()
    k = num_feasible_nodes_to_find(n, default_percentage if percentage is None else percentage, scoring)
    start = next_start % n
    order = np.concatenate((rows[start:], rows[:start])) if start else rows
    if k >= n:
        feasible = fw.run_filter(state, pod, NodeBatch(table, order), diagnosis)
        return feasible, (next_start + n) % live
    parts: list[Rows] = []
    found = pos = 0
    while found < k and pos < n:
        # First chunk: exactly k; later ones sized by the pass rate so far, so few rounds are needed.
        size = k if pos == 0 else int((k - found) * pos / max(found, 1)) + 32
        chunk = order[pos : pos + size]
        passed = fw.run_filter(state, pod, NodeBatch(table, chunk), diagnosis)
        pos += len(chunk)
        parts.append(passed)
        found += len(passed)
    feasible = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return feasible[:k], (next_start + pos) % live
