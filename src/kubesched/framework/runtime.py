"""The framework: runs a profile's plugins over a batch of nodes, extension point by extension point."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.guard import PASS_THROUGH, FrameworkError, PluginRaised, Timer, plugin_error, timed
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    CycleState,
    FilterPlugin,
    Handle,
    NodeBatch,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
    StaticFilterPlugin,
)
from kubesched.framework.profile import BuiltPlugin, ProfileSpec, instantiate
from kubesched.framework.registry import Registry
from kubesched.framework.signing import signature
from kubesched.framework.stages import FilterStages
from kubesched.framework.status import SUCCESS, Code, Status

_max_reduce = np.maximum.reduce  # the ufunc itself: skips ndarray.max's Python wrapper
_ALL_NODES = PreFilterResult()


@dataclass(frozen=True)
class FilterOutcome:
    feasible: Rows
    diagnosis: Diagnosis


class Framework:
    """A profile's plugins at each extension point, in the order they run there.

    Built from the ordered per-point lists (framework/build.py expands a configured profile into them);
    `Framework.build` puts every plugin of a flat `ProfileSpec` at each point it implements.
    ``plugins`` is every plugin once, in profile order (default: in order of first appearance).
    """

    def __init__(
        self,
        spec: ProfileSpec,
        *,
        pre_enqueue: Sequence[PreEnqueuePlugin] = (),
        queue_sort: Sequence[QueueSortPlugin] = (),
        pre_filter: Sequence[PreFilterPlugin] = (),
        filter: Sequence[FilterPlugin] = (),
        post_filter: Sequence[PostFilterPlugin] = (),
        pre_score: Sequence[PreScorePlugin] = (),
        score: Sequence[tuple[ScorePlugin, int]] = (),
        reserve: Sequence[ReservePlugin] = (),
        permit: Sequence[PermitPlugin] = (),
        pre_bind: Sequence[PreBindPlugin] = (),
        bind: Sequence[BindPlugin] = (),
        post_bind: Sequence[PostBindPlugin] = (),
        plugins: Sequence[Plugin] | None = None,
    ) -> None:
        self.spec = spec
        self.pre_enqueue = list(pre_enqueue)
        self.queue_sort = list(queue_sort)
        self.pre_filter = list(pre_filter)
        self.filter = list(filter)
        self.post_filter = list(post_filter)
        self.pre_score = list(pre_score)
        self.score = list(score)
        self.reserve = list(reserve)
        self.permit = list(permit)
        self.pre_bind = list(pre_bind)
        self.bind = list(bind)
        self.post_bind = list(post_bind)
        if plugins is None:
            every: list[Plugin] = [*self.pre_enqueue, *self.queue_sort, *self.pre_filter, *self.filter]
            every += [*self.post_filter, *self.pre_score, *(p for p, _ in self.score), *self.reserve]
            every += [*self.permit, *self.pre_bind, *self.bind, *self.post_bind]
            plugins = list(dict.fromkeys(every))
        self.plugins = list(plugins)
        # What follows is derived once from the lists above (they are not changed afterwards).
        self._filters = FilterStages(self.filter)
        self._stages = self._filters.stages
        # kube-scheduler's scheduler_plugin_evaluation_total: the pods (PreFilter, PreScore) or nodes (Filter,
        # Score) each plugin ran for, by (plugin, point); zero from the start, as upstream registers them.
        self.evaluations: dict[tuple[str, str], int] = {}
        for point, every_plugin in (
            ("PreFilter", self.pre_filter),
            ("Filter", self.filter),
            ("PreScore", self.pre_score),
            ("Score", [p for p, _ in self.score]),
        ):
            self.evaluations.update(((p.name, point), 0) for p in every_plugin)
        # The keys, made once (a tuple built per call would cost more than the count).
        self._pre_filter_keys = [(p.name, "PreFilter") for p in self.pre_filter]
        self._filter_keys = {id(p): (p.name, "Filter") for p in self.filter}
        self._pre_score_keys = [(p.name, "PreScore") for p in self.pre_score]
        self._score_keys = [(p.name, "Score") for p, _ in self.score]
        # Opportunistic batching needs every plugin that filters or scores to sign pods (as upstream).
        deciders = list(dict.fromkeys([*self.pre_filter, *self.filter, *self.pre_score, *(p for p, _ in self.score)]))
        self.signers: list[SignPlugin] | None = (
            [p for p in deciders if isinstance(p, SignPlugin)]
            if all(isinstance(p, SignPlugin) for p in deciders)
            else None
        )
        # Score plugins with a NormalizeScore of their own (their scores depend on the other candidates).
        self.normalizes = [type(p).normalize is not ScorePlugin.normalize for p, _ in self.score]
        self._sign_key = object()  # where this framework keeps a pod's signature in PodInfo.cache
        signers = self.signers or []
        self._static_signers = [p for p in signers if p.signs_statically()]
        self._dynamic_signers = [p for p in signers if not p.signs_statically()]

    @classmethod
    def of(cls, spec: ProfileSpec, built: Sequence[BuiltPlugin]) -> Framework:
        """Every plugin at each extension point it implements, in profile order."""
        plugins = [b.plugin for b in built]
        return cls(
            spec,
            pre_enqueue=[p for p in plugins if isinstance(p, PreEnqueuePlugin)],
            queue_sort=[p for p in plugins if isinstance(p, QueueSortPlugin)],
            pre_filter=[p for p in plugins if isinstance(p, PreFilterPlugin)],
            filter=[p for p in plugins if isinstance(p, FilterPlugin)],
            post_filter=[p for p in plugins if isinstance(p, PostFilterPlugin)],
            pre_score=[p for p in plugins if isinstance(p, PreScorePlugin)],
            score=[(b.plugin, b.weight) for b in built if isinstance(b.plugin, ScorePlugin)],
            reserve=[p for p in plugins if isinstance(p, ReservePlugin)],
            permit=[p for p in plugins if isinstance(p, PermitPlugin)],
            pre_bind=[p for p in plugins if isinstance(p, PreBindPlugin)],
            bind=[p for p in plugins if isinstance(p, BindPlugin)],
            post_bind=[p for p in plugins if isinstance(p, PostBindPlugin)],
            plugins=plugins,
        )

    @classmethod
    def build(cls, spec: ProfileSpec, registry: Registry, handle: Handle | None = None, path: str = "") -> Framework:
        """Validate a flat profile and build its plugins (`of`); raises ConfigurationError with every problem."""
        return cls.of(spec, instantiate(spec, registry, handle, path))

    def node_fields(self) -> NodeFields | None:
        """The Node fields the node-reading plugins need together (None: the whole partial Node)."""
        fields = NodeFields()
        readers = [
            p for p in self.plugins if isinstance(p, (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin))
        ]
        for plugin in readers:
            if plugin.node_fields is None:
                return None
            fields = fields.union(plugin.node_fields)
        return fields

    # ---- signatures --------------------------------------------------------------------------

    def sign(self, pod: PodInfo, timer: Timer | None = None) -> Hashable | None:
        """The pod's signature (kube-scheduler's SignPod): None when some plugin cannot sign it.

        Pods with equal signatures get equal verdicts and scores on the same nodes in the same state.
        What the static signers say is kept with the pod's spec (signed once per ReplicaSet); the
        dynamic ones (see `SignPlugin.signs_statically`) are asked for every pod.
        """
        if self.signers is None:
            return None
        cache = pod.cache  # shared by pods of equal spec, labels and namespace: signed once for all
        try:
            if self._sign_key in cache:
                static = cache[self._sign_key]
            else:
                static = cache[self._sign_key] = signature(pod, self._static_signers, timer)
            if static is None or not self._dynamic_signers:
                return static
            dynamic = signature(pod, self._dynamic_signers, timer)  # asked for every pod
        except PluginRaised as err:
            raise plugin_error("Sign", err.plugin, pod, err.err) from err.err
        return None if dynamic is None else (static, dynamic)

    # ---- PreFilter / Filter -------------------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        """Run PreFilter plugins: a rejection status, or SUCCESS and the node names left (None = all)
        with the plugins that narrowed them."""
        if not self.pre_filter:
            return _ALL_NODES
        allowed: frozenset[str] | None = None
        narrowed_by: list[str] = []
        rejected: Status | None = None
        plugin: PreFilterPlugin | None = None
        timer = state.timer
        try:
            evaluations = self.evaluations
            for plugin, key in zip(self.pre_filter, self._pre_filter_keys, strict=True):
                evaluations[key] += 1
                if timer is None:
                    result = plugin.pre_filter(state, pod, table)
                else:
                    result = timed(timer, plugin.name, "PreFilter", plugin.pre_filter, state, pod, table)
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
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise plugin_error("PreFilter", plugin, pod, err) from err
        if rejected is not None:
            return PreFilterResult(rejected)
        if allowed is None:
            return _ALL_NODES
        return PreFilterResult(SUCCESS, allowed, tuple(sorted(narrowed_by)))

    def run_filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, diagnosis: Diagnosis) -> Rows:
        """Run Filter plugins in order over the candidates; returns the feasible rows.

        Each plugin sees only the rows every earlier plugin passed, so each rejected node keeps
        the status of the first plugin that failed it, as in kube-scheduler. Consecutive static
        plugins run as one stage whose verdicts over all nodes are cached per pod shape.
        """
        rows = nodes.rows
        batch = nodes
        stage: FilterPlugin | tuple[StaticFilterPlugin, ...] | None = None
        evaluations, keys = self.evaluations, self._filter_keys
        try:
            for stage in self._stages:
                if not len(rows):
                    break
                if isinstance(stage, tuple):
                    n = len(rows)
                    for static in self._filters.active(stage, state):  # every node entering the stage
                        evaluations[keys[id(static)]] += n
                    rows = self._filters.run(stage, state, pod, nodes.table, rows, diagnosis)
                    continue
                plugin = stage
                if plugin.name in state.skip_filter:
                    continue
                evaluations[keys[id(plugin)]] += len(rows)
                if batch.rows is not rows:
                    batch = NodeBatch(nodes.table, rows)
                if state.timer is None:
                    verdicts = plugin.filter(state, pod, batch)
                else:
                    verdicts = timed(state.timer, plugin.name, "Filter", plugin.filter, state, pod, batch)
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
                diagnosis.add(rows[failed], verdicts.codes[failed], statuses, plugin.name)
                rows = rows[~failed]
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise plugin_error("Filter", stage, pod, err) from err
        return rows

    def passes(self, state: CycleState, pod: PodInfo, table: NodeTable, row: int) -> bool:
        """Whether one node passes every Filter plugin (a hinted node): `run_filter` without the diagnosis."""
        one: Rows | None = None
        stage: FilterPlugin | tuple[StaticFilterPlugin, ...] | None = None
        try:
            for stage in self._stages:
                if isinstance(stage, tuple):
                    active = self._filters.active(stage, state)
                    for static in active:
                        self.evaluations[self._filter_keys[id(static)]] += 1
                    if active and self._filters.codes(active, state, pod, table)[0][row]:
                        return False
                    continue
                if stage.name in state.skip_filter:
                    continue
                self.evaluations[self._filter_keys[id(stage)]] += 1
                if one is None:
                    one = np.array([row], dtype=np.intp)
                if state.timer is None:
                    verdicts = stage.filter(state, pod, NodeBatch(table, one))
                else:
                    verdicts = timed(state.timer, stage.name, "Filter", stage.filter, state, pod, NodeBatch(table, one))
                if verdicts.all_passed:
                    continue
                if verdicts.codes[0]:
                    status = verdicts.statuses[int(verdicts.codes[0]) - 1]
                    if status.code == Code.ERROR:
                        raise FrameworkError(status.with_plugin(stage.name), point="Filter")
                    return False
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise plugin_error("Filter", stage, pod, err) from err
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

    # ---- PreScore / Score ---------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> None:
        plugin: PreScorePlugin | None = None
        try:
            for plugin, key in zip(self.pre_score, self._pre_score_keys, strict=True):
                self.evaluations[key] += 1
                if state.timer is None:
                    status = plugin.pre_score(state, pod, nodes)
                else:
                    status = timed(state.timer, plugin.name, "PreScore", plugin.pre_score, state, pod, nodes)
                if status.code == Code.SKIP:
                    state.skip_score.add(plugin.name)
                elif not status.ok:
                    raise FrameworkError(status.with_plugin(plugin.name), point="PreScore")
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise plugin_error("PreScore", plugin, pod, err) from err

    def score_raw(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> list[IntColumn | None]:
        """Every Score plugin's scores before normalizing, in ``self.score`` order (None: skipped)."""
        skip = state.skip_score
        out: list[IntColumn | None] = []
        plugin: ScorePlugin | None = None
        try:
            timer, evaluations, n = state.timer, self.evaluations, len(nodes)
            for (plugin, _), key in zip(self.score, self._score_keys, strict=True):
                if skip and plugin.name in skip:
                    out.append(None)
                    continue
                evaluations[key] += n
                if timer is None:
                    out.append(plugin.score(state, pod, nodes))
                else:
                    out.append(timed(timer, plugin.name, "Score", plugin.score, state, pod, nodes))
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise plugin_error("Score", plugin, pod, err) from err
        return out

    def normalize_scores(
        self, state: CycleState, pod: PodInfo, nodes: NodeBatch, raw: list[IntColumn | None]
    ) -> list[IntColumn | None]:
        """NormalizeScore of every plugin that scored, each result checked to lie in [0, 100]."""
        return [
            None if scores is None else self.normalize_one(i, state, pod, nodes, scores) for i, scores in enumerate(raw)
        ]

    def normalize_one(self, i: int, state: CycleState, pod: PodInfo, nodes: NodeBatch, raw: IntColumn) -> IntColumn:
        """NormalizeScore of the i-th Score plugin, checked to lie in [0, 100]."""
        plugin = self.score[i][0]
        try:
            if state.timer is None:
                scores = plugin.normalize(state, pod, nodes, raw)
            else:
                scores = timed(
                    state.timer, plugin.name, "ScoreExtensionNormalize", plugin.normalize, state, pod, nodes, raw
                )
            if scores.dtype != np.int64:
                scores = np.asarray(scores, dtype=np.int64)
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise plugin_error("NormalizeScore", plugin, pod, err) from err
        # One reduction checks both bounds (MIN_NODE_SCORE is 0): negative scores are huge as unsigned.
        if len(scores) and _max_reduce(scores.view(np.uint64)) > MAX_NODE_SCORE:
            bad = int(scores[(scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)][0])
            raise FrameworkError(
                Status.error(
                    f"plugin {plugin.name!r} returns an invalid score {bad}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                ).with_plugin(plugin.name)
            )
        return scores

    def weigh(self, n: int, normalized: list[IntColumn | None]) -> tuple[IntColumn, int]:
        """Weighted totals per node, and the sum of the weights that took part."""
        totals = np.zeros(n, dtype=np.int64)
        weight_sum = 0
        for (_, weight), scores in zip(self.score, normalized, strict=True):
            if scores is not None:
                totals += scores if weight == 1 else scores * weight
                weight_sum += weight
        return totals, weight_sum

    def run_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> tuple[IntColumn, int]:
        """Score, NormalizeScore and weights: totals per node and the sum of the weights that took part."""
        return self.weigh(len(nodes), self.normalize_scores(state, pod, nodes, self.score_raw(state, pod, nodes)))

    def prioritize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> tuple[IntColumn, int]:
        self.run_pre_score(state, pod, nodes)
        return self.run_score(state, pod, nodes)
