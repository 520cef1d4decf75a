"""Every PreFilter and Filter plugin on its own, without the cycle's short cuts: what `kubesched explain` shows.

The cycle stops at a node's first failing Filter plugin and ends PreFilter at the first rejection; an
explanation asks each plugin about every node. The calls still go through the framework's one seam
(`Framework._call`: guarded, timed, observed).
"""

from __future__ import annotations

from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.guard import FrameworkError
from kubesched.framework.interfaces import CycleState, NodeBatch, PreFilterResult
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Verdicts


def each_pre_filter(
    fw: Framework, pod: PodInfo, table: NodeTable
) -> list[tuple[str, PreFilterResult | FrameworkError]]:
    """Each PreFilter plugin's answer, on a state of its own (the cycle's state is the framework's run);
    a plugin that fails gives its error."""
    out: list[tuple[str, PreFilterResult | FrameworkError]] = []
    for plugin in fw.pre_filter:
        try:
            out.append(
                (
                    plugin.name,
                    fw._call("PreFilter", plugin, None, pod, None, plugin.pre_filter, CycleState(), pod, table),
                )
            )
        except FrameworkError as err:
            out.append((plugin.name, err))
    return out


def each_filter(fw: Framework, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> list[tuple[str, Verdicts]]:
    """Each Filter plugin PreFilter did not skip, over all of ``nodes`` (not only those earlier ones passed)."""
    return [
        (p.name, fw._call("Filter", p, state.timer, pod, nodes, p.filter, state, pod, nodes))
        for p in fw.filter
        if p.name not in state.skip_filter
    ]
