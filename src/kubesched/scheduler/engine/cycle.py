"""One scheduling cycle: PreFilter, Filter, extenders, PreScore/Score, selection, Reserve, Permit.

Synchronous CPU work over the cache's NodeTable, as kube-scheduler's schedulingCycle does it:

* Filter examines nodes from a start index that rotates from cycle to cycle, and stops once
  ``numFeasibleNodesToFind`` are feasible (adaptive percentageOfNodesToScore); nodes are filtered in
  chunks of the table's rows, never one by one.
* A pod already nominated to a node (after preemption) tries that node first; if it passes, no scoring.
* Pods nominated elsewhere with at least this pod's priority count against their node while it filters.
* Extenders, when configured, are the only awaits: the table may change across them, so the nodes
  are carried by name and mapped back to rows afterwards.

The node search (nominated pods, the nominated or hinted node, the rotating Filter) is in search.py.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

from kubesched.cluster.cache import ClusterCache
from kubesched.core.nodetable import IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.guard import FrameworkError, plugin_error
from kubesched.framework.interfaces import CycleState, NodeBatch, PostFilterPlugin
from kubesched.framework.runtime import Framework
from kubesched.framework.selection import select_host
from kubesched.framework.status import SUCCESS, Code, Status
from kubesched.scheduler.engine import search
from kubesched.scheduler.engine.batch import BatchTiming, OpportunisticBatch
from kubesched.scheduler.engine.extenders import ExtenderError, Extenders, NoExtenders
from kubesched.scheduler.engine.nominator import Nominator
from kubesched.scheduler.engine.queue import QueuedPod

_OK = Code.SUCCESS  # an Enum member looked up once: Code.SUCCESS costs ~0.4 µs per access
log = logging.getLogger("kubesched.scheduler")
NO_NODES = "no nodes available to schedule pods"
_NOTHING = contextlib.nullcontext()
PLUGIN_METRICS_SAMPLE = 0.1  # kube-scheduler's pluginMetricsSamplePercent


def _ignore(key: tuple[str, Code, str], seconds: float) -> None:
    pass


EXTENDER = "Extender"


@dataclass(frozen=True, slots=True)
class _Nominated:
    """The pod's nominated node passed the plugins; the filter extenders are still to be asked."""

    table: NodeTable
    rows: Rows


@dataclass
class Outcome:
    """What a cycle decided: a node (assumed, reserved, permitted) or why not."""

    pod: PodInfo
    state: CycleState
    node: str | None = None
    status: Status = SUCCESS
    message: str = ""
    plugins: frozenset[str] = frozenset()  # plugins (or "Extender") that rejected the pod
    nominated: str | None = None
    post_filter: PostFilterPlugin | None = None
    waits: dict[str, float] = field(default_factory=dict)  # Permit plugins that said Wait, with timeouts
    evaluated: int = 0
    feasible: int = 0
    extender_rejected: bool = False
    signature: Hashable | None = None  # opportunistic batching's signature of the pod, and the node hinted
    hinted: int | None = None
    failure: FrameworkError | None = None  # the plugin error that ended the attempt (for the metric)
    bind_error: Exception | None = None  # what the binding raised (AlreadyAssignedError, BindingUnknownError)
    # Set by the scheduler for the binding's completion: the queue's entry (attempts, first queued) and
    # when the attempt began (perf_counter), for the end-to-end latency it reports.
    queued: QueuedPod | None = None
    started: float = 0.0

    @property
    def error(self) -> bool:
        return not self.status.ok and not self.status.rejected


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

    async def run(self, profile: Profile, pod: PodInfo) -> Outcome:
        """Decide a node for ``pod`` and assume it there; on failure the outcome says why."""
        self.count += 1
        self._sample = self.record_plugin if self._sampler.random() < PLUGIN_METRICS_SAMPLE else None
        out = Outcome(pod, CycleState())
        out.state.timer = self._sample  # the binding cycle (same state) is sampled with it, as upstream
        # Every plugin's exception becomes this pod's Error status (FrameworkError, logged with its
        # traceback where it is caught): the scheduler never ends for a plugin's bug.
        began = time.perf_counter()
        try:
            await self._decide(profile, out)
        except FrameworkError as err:
            out.status, out.message, out.node, out.failure = err.status, str(err), None, err
        except ExtenderError as err:
            out.status, out.message, out.node = Status.error(str(err)).with_plugin(EXTENDER), str(err), None
        except Exception as err:  # a bug outside any plugin: this pod's attempt fails, the scheduler goes on
            log.exception("scheduling cycle of %s failed", pod.key)
            message = f"scheduling cycle failed: {type(err).__name__}: {err}"
            out.status, out.message, out.node = Status.error(message), message, None
        if self.algorithm is not None:
            self.algorithm(time.perf_counter() - began)
        if out.node is not None:
            try:
                self._reserve_and_permit(profile.framework, out)
            except FrameworkError as err:
                out.status, out.message, out.node, out.failure = err.status, str(err), None, err
        return out

    async def _decide(self, profile: Profile, out: Outcome) -> None:
        fw, pod, state = profile.framework, out.pod, out.state
        table = self.cache.table
        total = len(table)
        if total == 0:
            out.status, out.message = Status.unresolvable(NO_NODES), NO_NODES
            return
        diagnosis = Diagnosis()
        batch = self.batch(profile)
        found = self._search(profile, out, diagnosis, batch, try_nominated=True)
        if isinstance(found, _Nominated):
            # The filter extenders are awaited with the table as the cache has it: nominated pods are
            # counted only inside `_search`, which never awaits (another task may change the table now).
            names, rejected = await self._extender_filter(pod, found.table, found.rows, Diagnosis())
            out.extender_rejected = rejected
            row = self.cache.table.index.get(names[0]) if names else None
            if row is not None:
                out.node = self.cache.table.names[row]
                return
            found = self._search(profile, out, diagnosis, batch, try_nominated=False)
            assert not isinstance(found, _Nominated)  # only with try_nominated
        if isinstance(found, int):
            out.node = self.cache.table.names[found]
            return
        table, feasible = self.cache.table, found
        signature, hinted = out.signature, out.hinted
        out.evaluated = len(feasible) + diagnosis.rejected_count()
        if len(feasible) and self.extenders.filters(pod):
            names, rejected = await self._extender_filter(pod, table, feasible, diagnosis)
            out.extender_rejected = out.extender_rejected or rejected
            feasible = self.cache.table.rows_for(names)
            table = self.cache.table
        out.feasible = len(feasible)
        if not len(feasible):
            self._fail(profile, out, diagnosis, total)
            return
        if len(feasible) == 1:
            out.node = table.names[int(feasible[0])]
            if batch is not None:
                batch.store(signature, hinted, int(feasible[0]), table, self.count, None)
            return
        batch_of = NodeBatch(table, feasible)
        record, clock = self.record, time.perf_counter
        began = clock()
        fw.run_pre_score(state, pod, batch_of)
        scoring = clock()
        record(("PreScore", _OK, profile.name), scoring - began)
        raw = fw.score_raw(state, pod, batch_of)
        normalized = fw.normalize_scores(state, pod, batch_of, raw)
        totals, _ = fw.weigh(len(feasible), normalized)
        record(("Score", _OK, profile.name), clock() - scoring)
        if self.extenders.prioritizers(pod):
            names = table.name_array()[feasible].tolist()
            extra = await self.extenders.prioritize(pod, table, feasible)
            totals = totals + np.fromiter((extra.get(n, 0) for n in names), dtype=np.int64, count=len(names))
        best = select_host(totals, self.rng)
        chosen = int(feasible[best])
        if self.observe_scores is not None:
            self.observe_scores(fw, normalized, best)
        out.node = table.names[chosen]
        if batch is not None:
            batch.store(signature, hinted, chosen, table, self.count, (feasible, raw, normalized, totals, best))

    def _search(
        self,
        profile: Profile,
        out: Outcome,
        diagnosis: Diagnosis,
        batch: OpportunisticBatch | None,
        try_nominated: bool,
    ) -> Rows | int | _Nominated:
        """PreFilter and Filter, with the nominated pods counted: the feasible rows, a row taken without
        search (the batch's hint), or the pod's nominated node that passed (the caller asks the filter
        extenders). Synchronous on purpose: the nominated pods are added to the shared table and removed
        again before anything else can run."""
        fw, pod, state = profile.framework, out.pod, out.state
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
            out.signature, out.hinted = signature, hinted
            # Filter over the nominated or hinted node counts as Filter, as upstream's evaluateNominatedNode.
            began = clock()
            if try_nominated:
                nominated = search.try_nominated(self.nominator, fw, state, pod, table, pre)
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
                out.evaluated = out.feasible = 1
                if batch is not None:
                    batch.store(signature, hinted, hinted, table, self.count, None)
                record(("Filter", _OK, profile.name), clock() - began)
                return hinted
            feasible, self.next_start = search.find(
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

    def _fail(self, profile: Profile, out: Outcome, diagnosis: Diagnosis, total: int) -> None:
        """No feasible node: PostFilter (preemption), then kube-scheduler's FitError message."""
        pod, state = out.pod, out.state
        plugins = diagnosis.plugins()
        if out.extender_rejected:
            plugins.add(EXTENDER)
        out.plugins = frozenset(plugins)
        reasons: list[str] = []
        began = time.perf_counter()
        code = Code.UNSCHEDULABLE
        for plugin in profile.framework.post_filter:
            started = time.perf_counter()
            try:
                nominated, status = plugin.post_filter(state, pod, self.cache.table, diagnosis)
            except Exception as err:
                raise plugin_error("PostFilter", plugin, pod, err) from err
            status = status.with_plugin(plugin.name)
            if self._sample is not None:
                self._sample(plugin.name, "PostFilter", status.code, time.perf_counter() - started)
            code = status.code
            if status.ok:
                out.nominated, out.post_filter = nominated or None, plugin
                reasons = list(status.reasons)  # kube-scheduler shows a success's message too (v1.37's preemption)
                break
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                reasons = list(status.reasons)
                break
            if not status.rejected:
                # A PostFilter error keeps the pod's rejection but says what went wrong.
                reasons = [status.message]
                break
            reasons += status.reasons
        if profile.framework.post_filter:
            self.record(("PostFilter", code, profile.name), time.perf_counter() - began)
        diagnosis.post_filter_message = ", ".join(reasons)
        out.message = diagnosis.message(total)
        # Rejected either way; only the message, built like kube-scheduler's FitError, is shown.
        out.status = Status(Code.UNSCHEDULABLE, (out.message,), "")

    def _reserve_and_permit(self, fw: Framework, out: Outcome) -> None:
        """Assume the pod on its node, then Reserve and Permit; any failure undoes it all."""
        pod, state, node = out.pod, out.state, out.node or ""
        self.cache.assume(pod, node)
        self.nominator.remove(pod.uid)
        failure: Status | None = None
        raised: FrameworkError | None = None
        point = "Reserve"
        current: object = None  # the plugin being run, for the error
        clock, profile = time.perf_counter, fw.spec.scheduler_name
        sample = self._sample
        began = clock()
        try:
            for reserve in fw.reserve:
                current = reserve
                started = clock()
                status = reserve.reserve(state, pod, node).with_plugin(reserve.name)
                if sample is not None:
                    sample(reserve.name, point, status.code, clock() - started)
                if not status.ok:
                    failure = status
                    break
            permitting = clock()
            self.record((point, failure.code if failure else _OK, profile), permitting - began)
            if failure is None:
                point = "Permit"
                code = _OK
                for permit in fw.permit:
                    current = permit
                    started = clock()
                    status, timeout = permit.permit(state, pod, node)
                    status = status.with_plugin(permit.name)
                    if sample is not None:
                        sample(permit.name, point, status.code, clock() - started)
                    if status.code == Code.WAIT:
                        out.waits[permit.name] = timeout
                        code = Code.WAIT
                    elif not status.ok:
                        failure = status
                        code = status.code
                        break
                self.record((point, code, profile), clock() - permitting)
        except Exception as err:
            raised = plugin_error(point, current, pod, err)
            failure = raised.status
            self.record((point, Code.ERROR, profile), clock() - began)
        if failure is not None:
            unreserve(fw, state, pod, node, self.record)
            self.cache.forget(pod.uid)
            out.node = None
            out.status = failure
            out.message = str(raised) if raised else failure.message or f"{failure.plugin} rejected the pod"
            out.plugins = frozenset({failure.plugin})
            out.failure = raised


def unreserve(
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    node: str,
    record: Callable[[tuple[str, Code, str], float], None] = _ignore,
) -> None:
    """Unreserve every Reserve plugin, in reverse order (each must be idempotent); one that raises is
    logged and the others still run. ``record`` takes the extension point's duration, as upstream's."""
    clock, timer = time.perf_counter, state.timer
    began = clock()
    for plugin in reversed(fw.reserve):
        started = clock()
        try:
            plugin.unreserve(state, pod, node)
        except Exception as err:
            plugin_error("Unreserve", plugin, pod, err)
        if timer is not None:
            timer(plugin.name, "Unreserve", _OK, clock() - started)
    record(("Unreserve", _OK, fw.spec.scheduler_name), clock() - began)
