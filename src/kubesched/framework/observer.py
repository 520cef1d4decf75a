"""What a framework tells an observer about each plugin call (`Framework.observer`: off, None, by default).

The framework calls `Observer.observe` after every plugin call it makes (extension point, plugin, the
node or nodes the call covered, the status per node or for the call, the scores), so a recorder such as
`explain` or kube-scheduler-simulator's plugin wrappers sees every verdict and score without wrapping the
plugins. `observation` turns a plugin's answer into those fields; it runs only when an observer is set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kubesched.framework.interfaces import NodeBatch, PreFilterResult
from kubesched.framework.status import SUCCESS, Code, Status, Verdicts


class Observer(Protocol):
    """Receives every plugin call of a framework: point, plugin, node name(s), status(es), score(s).

    ``statuses`` has one status per node of ``nodes`` when the plugin answered per node (Filter), else
    one for the call; ``scores`` (Score, NormalizeScore) one per node, else None.
    """

    def observe(
        self,
        point: str,
        plugin: str,
        nodes: Sequence[str],
        statuses: Sequence[Status],
        scores: Sequence[int] | None,
    ) -> None: ...


_CANNOT_SIGN = Status(Code.UNSCHEDULABLE, ("the plugin cannot sign the pod",), "")


def observation(
    point: str, plugin: str, nodes: NodeBatch | str | None, result: object
) -> tuple[tuple[str, ...], tuple[Status, ...], tuple[int, ...] | None]:
    """The node names, statuses and scores a plugin's answer ``result`` at ``point`` stands for."""
    names = tuple(nodes.names()) if isinstance(nodes, NodeBatch) else () if nodes is None else (nodes,)
    if point == "Sign":
        return names, (SUCCESS if result is not None else _CANNOT_SIGN.with_plugin(plugin),), None
    if isinstance(result, Verdicts):
        if result.all_passed:
            return names, (SUCCESS,) * len(names), None
        stamped = [s.with_plugin(plugin) for s in result.statuses]
        return names, tuple(SUCCESS if c == 0 else stamped[c - 1] for c in result.codes.tolist()), None
    if isinstance(result, np.ndarray):
        return names, (SUCCESS,), tuple(int(s) for s in result.tolist())
    if isinstance(result, PreFilterResult):
        return names, (result.status,), None
    if isinstance(result, tuple):  # Permit's (status, timeout), PostFilter's (nominated node, status)
        status = next((part for part in result if isinstance(part, Status)), SUCCESS)
        return names, (status,), None
    return names, (result if isinstance(result, Status) else SUCCESS,), None
