"""The Filter plugins as stages: consecutive static filters grouped, their verdicts cached per pod shape.

`FilterStages` groups a profile's Filter plugins in order, consecutive `StaticFilterPlugin`s into one
stage, and evaluates a static stage over every node of the table once per pod shape, the result kept in
`NodeTable.derived` until the nodes change. The `Framework` runs the stages (runtime.py) and passes its
plugin-call helper (`Framework._call`: guarded, timed, observed) in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.core.nodetable import NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.diagnosis import Diagnosis, Rejection
from kubesched.framework.guard import FrameworkError
from kubesched.framework.interfaces import CycleState, FilterPlugin, NodeBatch, StaticFilterPlugin
from kubesched.framework.status import Code, Status

Call = Callable[..., Any]  # Framework._call(point, plugin, timer, pod, nodes, method, *args)


class FilterStages:
    """A profile's Filter plugins in order, consecutive static ones grouped into one stage (a tuple)."""

    def __init__(self, filters: list[FilterPlugin]) -> None:
        self.stages = _stages(filters)
        self._stage_names = {
            stage: frozenset(p.name for p in stage) for stage in self.stages if isinstance(stage, tuple)
        }

    def active(self, stage: tuple[StaticFilterPlugin, ...], state: CycleState) -> tuple[StaticFilterPlugin, ...]:
        """The stage's plugins PreFilter did not skip (the stage itself, a stable key, when none was)."""
        skip = state.skip_filter
        if not skip or skip.isdisjoint(self._stage_names[stage]):
            return stage
        return tuple(p for p in stage if p.name not in skip)

    def codes(
        self, active: tuple[StaticFilterPlugin, ...], state: CycleState, pod: PodInfo, table: NodeTable, call: Call
    ) -> tuple[npt.NDArray[np.int32], tuple[Status, ...]]:
        """The stage's first failing status per row of the table, cached per pod shape."""
        # The pod's shapes for this stage are computed once per pod (pods are tried again and again).
        shapes = pod.cache.get(active)
        if shapes is None:
            shapes = pod.cache[active] = tuple([call("Filter", p, None, pod, None, p.shape, pod) for p in active])
        key = (self, active, shapes)
        cached = table.derived.get(key)
        if cached is None:
            cached = self._verdicts(active, state, pod, table, call)
            if len(table.derived) > 1024:  # many shapes: keep memory bounded
                table.derived.clear()
            table.derived[key] = cached
        return cached

    def run(
        self,
        stage: tuple[StaticFilterPlugin, ...],
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        rows: Rows,
        diagnosis: Diagnosis,
        call: Call,
    ) -> Rows:
        active = self.active(stage, state)
        if not active:
            return rows
        codes_all, statuses = self.codes(active, state, pod, table, call)
        if len(rows) == 1 and not codes_all[rows[0]]:
            return rows  # one node (a hinted or nominated one) that passes: no arrays needed
        codes = codes_all[rows]
        failed = codes != 0
        if not failed.any():
            return rows
        diagnosis.rejections.append(Rejection(rows[failed], codes[failed], statuses))
        kept: Rows = rows[~failed]
        return kept

    def _verdicts(
        self, stage: tuple[StaticFilterPlugin, ...], state: CycleState, pod: PodInfo, table: NodeTable, call: Call
    ) -> tuple[npt.NDArray[np.int32], tuple[Status, ...]]:
        """First failing status over every node of the table, for one pod shape (timed when it is
        evaluated, not when its cached verdicts are looked up)."""
        codes_all = np.zeros(table.size, dtype=np.int32)
        statuses: list[Status] = []
        rows = table.rows()
        for plugin in stage:
            if not len(rows):
                break
            batch = NodeBatch(table, rows)
            verdicts = call("Filter", plugin, state.timer, pod, batch, plugin.filter, state, pod, batch)
            failed = verdicts.failed if verdicts.failed is not None else verdicts.codes != 0
            if not failed.any():
                continue
            for s in verdicts.statuses:
                if s.code == Code.ERROR:
                    raise FrameworkError(s.with_plugin(plugin.name), point="Filter")
            codes_all[rows[failed]] = verdicts.codes[failed] + len(statuses)
            statuses.extend(s.with_plugin(plugin.name) for s in verdicts.statuses)
            rows = rows[~failed]
        return codes_all, tuple(statuses)


def _stages(filters: list[FilterPlugin]) -> list[FilterPlugin | tuple[StaticFilterPlugin, ...]]:
    """Filter plugins in order, consecutive static ones grouped into one stage."""
    stages: list[FilterPlugin | tuple[StaticFilterPlugin, ...]] = []
    for plugin in filters:
        if isinstance(plugin, StaticFilterPlugin):
            last = stages[-1] if stages else None
            if isinstance(last, tuple):
                stages[-1] = (*last, plugin)
            else:
                stages.append((plugin,))
        else:
            stages.append(plugin)
    return stages
