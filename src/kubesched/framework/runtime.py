"""The framework: runs a profile's plugins at every extension point (kube-scheduler's frameworkImpl).

`run_pre_enqueue` … `run_post_bind` are upstream's `RunPreEnqueuePlugins` … `RunPostBindPlugins`; the
engine (scheduler/engine/) only puts them in order. Every plugin call goes through `Framework._call`
(`_acall` for the awaited PreBind and Bind): a plugin's exception becomes an Error status with
kube-scheduler's wording (`guard.ERROR_MESSAGES`), a sampled cycle's call is timed (`CycleState.timer`,
scheduler_plugin_execution_duration_seconds), and an observer, if any, is told (`observer.Observer`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from time import perf_counter
from typing import Any, TypeVar

import numpy as np

from kubesched.core.nodetable import IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.diagnosis import Diagnosis, Rejection
from kubesched.framework.guard import PASS_THROUGH, FrameworkError, Timer, plugin_error, timed
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    AlreadyAssignedError,
    BindingUnknownError,
    CycleState,
    FilterPlugin,
    NodeBatch,
    Plugin,
    PreFilterResult,
    SignPlugin,
)
from kubesched.framework.observer import observation
from kubesched.framework.points import ExtensionPoints
from kubesched.framework.results import FilterOutcome, PostFilterResult, Scores
from kubesched.framework.status import SUCCESS, Code, Status

T = TypeVar("T")
_max_reduce = np.maximum.reduce  # the ufunc itself: skips ndarray.max's Python wrapper
_ALL_NODES = PreFilterResult()
_OK = Code.SUCCESS
_BIND_OUTCOMES = (*PASS_THROUGH, AlreadyAssignedError, BindingUnknownError)  # for the scheduler to settle


class Framework(ExtensionPoints):
    """Runs the plugins of `ExtensionPoints` point by point; built by framework/build.py or `build`."""

    def _call(
        self,
        point: str,
        plugin: Plugin,
        timer: Timer | None,
        pod: PodInfo | None,
        nodes: NodeBatch | str | None,
        call: Callable[..., T],
        *args: object,
    ) -> T:
        """The one way a plugin is called: guarded, timed when the cycle is sampled, observed if asked."""
        try:
            result = call(*args) if timer is None else timed(timer, plugin.name, point, call, *args)
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise plugin_error(point, plugin, pod, err) from err
        if self.observer is not None:
            self.observer.observe(point, plugin.name, *observation(point, plugin.name, nodes, result))
        return result

    async def _acall(
        self,
        point: str,
        plugin: Plugin,
        state: CycleState,
        pod: PodInfo,
        node: str,
        call: Callable[..., Awaitable[Status]],
    ) -> Status:
        """`_call` for an awaited plugin method (PreBind, Bind); a binder's AlreadyAssignedError and
        BindingUnknownError pass through to the scheduler, which finds out what became of the Binding."""
        timer = state.timer
        began = perf_counter()
        try:
            status = await call(state, pod, node)
        except _BIND_OUTCOMES:
            raise
        except Exception as err:
            if timer is not None:
                timer(plugin.name, point, Code.ERROR, perf_counter() - began)
            raise plugin_error(point, plugin, pod, err) from err
        if timer is not None:
            timer(plugin.name, point, status.code, perf_counter() - began)
        if self.observer is not None:
            self.observer.observe(point, plugin.name, *observation(point, plugin.name, node, status))
        return status

    def run_pre_enqueue(self, pod: PodInfo, timer: Timer | None = None) -> Status:
        """PreEnqueue plugins in order: the first that does not admit the pod, else SUCCESS."""
        for plugin in self.pre_enqueue:
            status = self._call("PreEnqueue", plugin, timer, pod, None, plugin.pre_enqueue, pod)
            if not status.ok:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def queue_sort_key(self, pod: PodInfo, queued_at: float) -> tuple[Any, ...]:
        """The QueueSort plugin's key for the pod (the queue orders by it; a profile has at most one)."""
        plugin = self.queue_sort[0]
        return self._call("QueueSort", plugin, None, pod, None, plugin.sort_key, pod, queued_at)

    def sign(self, pod: PodInfo, timer: Timer | None = None) -> Hashable | None:
        """The pod's signature (kube-scheduler's SignPod; None: some plugin cannot sign it): equal signatures get
        equal verdicts and scores. The static signers' part is kept with the pod's spec (signed once per
        ReplicaSet); the dynamic ones (`SignPlugin.signs_statically`) are asked for every pod."""
        if self.signers is None:
            return None
        cache = pod.cache  # shared by pods of equal spec, labels and namespace: signed once for all
        if self._sign_key in cache:
            static = cache[self._sign_key]
        else:
            static = cache[self._sign_key] = self._signature(pod, self._static_signers, timer)
        if static is None or not self._dynamic_signers:
            return static
        dynamic = self._signature(pod, self._dynamic_signers, timer)  # asked for every pod
        return None if dynamic is None else (static, dynamic)

    def _signature(self, pod: PodInfo, signers: list[SignPlugin], timer: Timer | None) -> Hashable | None:
        """The scheduler name and every signer's fragments, or None as soon as one cannot sign the pod."""
        fragments: list[object] = [pod.pod.spec.scheduler_name]
        for plugin in signers:
            part = self._call("Sign", plugin, timer, pod, None, plugin.sign, pod)
            if part is None:
                return None
            fragments.append(part)
        return tuple(fragments)

    def run_pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        """Run PreFilter plugins: a rejection status, or SUCCESS and the node names left (None = all)
        with the plugins that narrowed them."""
        if not self.pre_filter:
            return _ALL_NODES
        allowed: frozenset[str] | None = None
        narrowed_by: list[str] = []
        rejected: Status | None = None
        timer, evaluations = state.timer, self.evaluations
        for plugin, key in zip(self.pre_filter, self._pre_filter_keys, strict=True):
            evaluations[key] += 1
            result = self._call("PreFilter", plugin, timer, pod, None, plugin.pre_filter, state, pod, table)
            status = result.status
            if status.code not in (Code.SUCCESS, Code.SKIP):  # only answers someone reads carry a name
                status = status.with_plugin(plugin.name)
            if status.code == Code.SKIP:
                state.skip_filter.add(plugin.name)
                continue
            if status.code == Code.ERROR:
                raise FrameworkError(status, point="PreFilter")
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return PreFilterResult(status)
            if status.rejected:
                rejected = status
                continue
            if result.node_names is not None:
                allowed = result.node_names if allowed is None else allowed & result.node_names
                narrowed_by.append(plugin.name)
                if not allowed:
                    names = sorted(narrowed_by)
                    msg = (
                        f"node(s) didn't satisfy plugin {names[0]}"
                        if len(names) == 1
                        else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    )
                    return PreFilterResult(Status.unresolvable(msg).with_plugin(names[0]))
        if rejected is not None:
            return PreFilterResult(rejected)
        if allowed is None:
            return _ALL_NODES
        return PreFilterResult(SUCCESS, allowed, tuple(sorted(narrowed_by)))

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int
    ) -> None:
        """AddPod of every PreFilter extension PreFilter did not skip (preemption's dry run)."""
        for p in self._extensions:
            if p.name not in state.skip_filter:
                self._call("PreFilterExtensionAddPod", p, None, pod, None, p.add_pod, state, pod, added, table, row)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int
    ) -> None:
        """RemovePod of every PreFilter extension PreFilter did not skip (preemption's dry run)."""
        for p in self._extensions:
            if p.name not in state.skip_filter:
                self._call(
                    "PreFilterExtensionRemovePod", p, None, pod, None, p.remove_pod, state, pod, removed, table, row
                )

    def run_filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, diagnosis: Diagnosis) -> Rows:
        """Run Filter plugins in order over the candidates; returns the feasible rows.

        Each plugin sees only the rows every earlier plugin passed, so each rejected node keeps
        the status of the first plugin that failed it, as in kube-scheduler. Consecutive static
        plugins run as one stage whose verdicts over all nodes are cached per pod shape (not while
        observed: the observer is told of every plugin's verdict on these very nodes).
        """
        rows = nodes.rows
        batch = nodes
        timer, evaluations, keys = state.timer, self.evaluations, self._filter_keys
        for stage in self._stages if self.observer is None else self.filter:
            if not len(rows):
                break
            if isinstance(stage, tuple):
                n = len(rows)
                for static in self._filters.active(stage, state):  # every node entering the stage
                    evaluations[keys[id(static)]] += n
                rows = self._filters.run(stage, state, pod, nodes.table, rows, diagnosis, self._call)
                continue
            plugin: FilterPlugin = stage
            if plugin.name in state.skip_filter:
                continue
            evaluations[keys[id(plugin)]] += len(rows)
            if batch.rows is not rows:
                batch = NodeBatch(nodes.table, rows)
            verdicts = self._call("Filter", plugin, timer, pod, batch, plugin.filter, state, pod, batch)
            if verdicts.all_passed:
                continue
            failed = verdicts.failed if verdicts.failed is not None else verdicts.codes != 0
            if not failed.any():
                continue
            statuses = tuple(verdicts.statuses)
            for s in statuses:
                if s.code == Code.ERROR:
                    raise FrameworkError(s.with_plugin(plugin.name), point="Filter")
            # The plugin's name rides on the rejection; statuses are stamped only when read.
            diagnosis.rejections.append(Rejection(rows[failed], verdicts.codes[failed], statuses, plugin.name))
            rows = rows[~failed]
        return rows

    def passes(self, state: CycleState, pod: PodInfo, table: NodeTable, row: int) -> bool:
        """Whether one node passes every Filter plugin (a hinted node): `run_filter` without the diagnosis."""
        one = NodeBatch(table, np.array([row], dtype=np.intp))
        timer = state.timer
        for stage in self._stages if self.observer is None else self.filter:
            if isinstance(stage, tuple):
                active = self._filters.active(stage, state)
                for static in active:
                    self.evaluations[self._filter_keys[id(static)]] += 1
                if active and self._filters.codes(active, state, pod, table, self._call)[0][row]:
                    return False
                continue
            if stage.name in state.skip_filter:
                continue
            self.evaluations[self._filter_keys[id(stage)]] += 1
            verdicts = self._call("Filter", stage, timer, pod, one, stage.filter, state, pod, one)
            if verdicts.all_passed:
                continue
            if verdicts.codes[0]:
                status = verdicts.statuses[int(verdicts.codes[0]) - 1]
                if status.code == Code.ERROR:
                    raise FrameworkError(status.with_plugin(stage.name), point="Filter")
                return False
        return True

    def find_feasible(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> FilterOutcome:
        """PreFilter then Filter over ``nodes``, with every rejection recorded."""
        diagnosis = Diagnosis()
        pre = self.run_pre_filter(state, pod, nodes.table)
        if pre.status.rejected:
            diagnosis.pre_filter = pre.status
            return FilterOutcome(nodes.rows[:0], diagnosis)
        rows = pre.narrow(nodes.table, nodes.rows, diagnosis)
        feasible = self.run_filter(state, pod, NodeBatch(nodes.table, rows), diagnosis)
        return FilterOutcome(feasible, diagnosis)

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        """PostFilter plugins in order until one nominates a node, or says it is hopeless or failed."""
        reasons: list[str] = []
        code = Code.UNSCHEDULABLE
        for plugin in self.post_filter:
            nominated, status = self._call(
                "PostFilter", plugin, state.timer, pod, None, plugin.post_filter, state, pod, table, diagnosis
            )
            status = status.with_plugin(plugin.name)
            code = status.code
            if status.ok:  # kube-scheduler shows a success's message too (v1.37's preemption)
                return PostFilterResult(code, tuple(status.reasons), nominated or None, plugin)
            if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return PostFilterResult(code, tuple(status.reasons))
            if not status.rejected:  # a PostFilter error keeps the pod's rejection but says what went wrong
                return PostFilterResult(code, (status.message,))
            reasons += status.reasons
        return PostFilterResult(code, tuple(reasons))

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> None:
        timer = state.timer
        for plugin, key in zip(self.pre_score, self._pre_score_keys, strict=True):
            self.evaluations[key] += 1
            status = self._call("PreScore", plugin, timer, pod, nodes, plugin.pre_score, state, pod, nodes)
            if status.code == Code.SKIP:
                state.skip_score.add(plugin.name)
            elif not status.ok:
                raise FrameworkError(status.with_plugin(plugin.name), point="PreScore")

    def run_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeBatch,
        raw: list[IntColumn | None] | None = None,
        normalized: list[IntColumn | None] | None = None,
        normalize: bool = True,
    ) -> Scores:
        """Score, NormalizeScore (each checked to lie in [0, 100]) and the weights: upstream's RunScorePlugins.

        Opportunistic batching passes ``raw`` scores it keeps (then no Score plugin runs) and the
        ``normalized`` columns still true (None where NormalizeScore must run again), or asks for the raw
        scores alone (``normalize=False``: no normalized scores, no totals).
        """
        timer = state.timer
        if raw is None:
            skip, evaluations, n = state.skip_score, self.evaluations, len(nodes)
            raw = []
            for (plugin, _), key in zip(self.score, self._score_keys, strict=True):
                if skip and plugin.name in skip:
                    raw.append(None)
                    continue
                evaluations[key] += n
                raw.append(self._call("Score", plugin, timer, pod, nodes, plugin.score, state, pod, nodes))
        if not normalize:
            return Scores(raw, [None] * len(raw), np.zeros(len(nodes), dtype=np.int64), 0)
        out: list[IntColumn | None] = []
        totals = np.zeros(len(nodes), dtype=np.int64)
        weight_sum = 0
        for i, ((plugin, weight), scores) in enumerate(zip(self.score, raw, strict=True)):
            kept = normalized[i] if normalized is not None else None
            if scores is None:
                out.append(None)
                continue
            if kept is None:
                kept = self._call(
                    "ScoreExtensionNormalize", plugin, timer, pod, nodes, plugin.normalize, state, pod, nodes, scores
                )
                if kept.dtype != np.int64:
                    kept = np.asarray(kept, dtype=np.int64)
                # One reduction checks both bounds (MIN_NODE_SCORE is 0): negative scores are huge as unsigned.
                if len(kept) and _max_reduce(kept.view(np.uint64)) > MAX_NODE_SCORE:
                    bad = int(kept[(kept < MIN_NODE_SCORE) | (kept > MAX_NODE_SCORE)][0])
                    raise FrameworkError(
                        Status.error(
                            f"plugin {plugin.name!r} returns an invalid score {bad}, it should in the range of "
                            f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                        ).with_plugin(plugin.name)
                    )
            out.append(kept)
            totals += kept if weight == 1 else kept * weight
            weight_sum += weight
        return Scores(raw, out, totals, weight_sum)

    def prioritize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> tuple[IntColumn, int]:
        """PreScore and `run_score`: totals per node and the sum of the weights that took part."""
        self.run_pre_score(state, pod, nodes)
        scores = self.run_score(state, pod, nodes)
        return scores.totals, scores.weight_sum

    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Reserve plugins in order: the first failure (the caller then runs `run_unreserve`), else SUCCESS."""
        for plugin in self.reserve:
            status = self._call("Reserve", plugin, state.timer, pod, node, plugin.reserve, state, pod, node)
            if not status.ok:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """Unreserve every Reserve plugin, in reverse order (each must be idempotent); one that raises is
        logged and the others still run."""
        for plugin in reversed(self.reserve):
            try:
                self._call("Unreserve", plugin, state.timer, pod, node, plugin.unreserve, state, pod, node)
            except FrameworkError:
                continue  # logged with its traceback by the guard

    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, dict[str, float]]:
        """Permit plugins in order: a rejection, or SUCCESS (WAIT when some said Wait) and who waits how long."""
        waits: dict[str, float] = {}
        for plugin in self.permit:
            status, timeout = self._call("Permit", plugin, state.timer, pod, node, plugin.permit, state, pod, node)
            if status.code == Code.WAIT:
                waits[plugin.name] = timeout
            elif not status.ok:
                return status.with_plugin(plugin.name), waits
        return (Status(Code.WAIT) if waits else SUCCESS), waits

    def run_pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> bool:
        """Whether some PreBind plugin has work for this pod (upstream's PreBindPreFlight; one that raises:
        yes, its PreBind will say what is wrong)."""
        for plugin in self.pre_bind:
            try:
                status = self._call(
                    "PreBindPreFlight", plugin, None, pod, node, plugin.pre_bind_pre_flight, state, pod, node
                )
            except FrameworkError:
                return True
            if status.code != Code.SKIP:
                return True
        return False

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """PreBind of every plugin whose PreBindPreFlight did not skip the pod: the first failure, else SUCCESS."""
        for plugin in self.pre_bind:
            flight = self._call(
                "PreBindPreFlight", plugin, None, pod, node, plugin.pre_bind_pre_flight, state, pod, node
            )
            if flight.code == Code.SKIP:
                continue  # nothing to do for this pod
            status = await self._acall("PreBind", plugin, state, pod, node, plugin.pre_bind)
            if not status.ok:
                return status.with_plugin(plugin.name)
        return SUCCESS

    async def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, Exception | None]:
        """Bind plugins in order until one does not Skip; with the binding error the scheduler must resolve
        (AlreadyAssignedError, BindingUnknownError: the pod may be bound)."""
        for plugin in self.bind:
            try:
                status = await self._acall("Bind", plugin, state, pod, node, plugin.bind)
            except (AlreadyAssignedError, BindingUnknownError) as err:
                return Status.error(str(err)).with_plugin(plugin.name), err
            if status.code == Code.SKIP:
                continue
            # Only a failure is reported (a success's plugin is read by no one: no new Status per pod).
            return (status if status is SUCCESS or status.ok else status.with_plugin(plugin.name)), None
        return Status.error(f"no bind plugin bound pod {pod.key}"), None

    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> FrameworkError | None:
        """PostBind of every plugin (the pod is bound: one that raises is logged, the others still run);
        the last such error, for the scheduler's metric."""
        failure: FrameworkError | None = None
        for plugin in self.post_bind:
            try:
                self._call("PostBind", plugin, state.timer, pod, node, plugin.post_bind, state, pod, node)
            except FrameworkError as err:
                failure = err
        return failure
