"""Nominated pods in the node search: counted while a pod filters, the nominated or hinted node tried.

Module functions over the cache's NodeTable that `Cycle._search` (cycle.py, where `find`, the rotating
Filter in chunks, lives) composes only when there are nominated pods or a hint: `nominated_pods`
counts pods nominated elsewhere on their nodes while a pod filters and `second_pass` checks that a node
passes without them too; `try_nominated` and `hint_passes` try one node (the pod's nominated node, or
opportunistic batching's hint) before any search.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from kubesched.cluster.cache import ClusterCache
from kubesched.core.nodetable import NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interfaces import CycleState, NodeBatch, PreFilterResult
from kubesched.framework.runtime import Framework
from kubesched.scheduler.engine.nominator import Nominator


@contextlib.contextmanager
def nominated_pods(
    cache: ClusterCache, nominator: Nominator, table: NodeTable, pod: PodInfo, added: dict[int, list[PodInfo]]
) -> Iterator[None]:
    """Count nominated pods at least as important as ``pod`` on their nodes while it filters.

    ``added`` receives them by row, for the second pass (`second_pass`).
    """
    for node, other in nominator.ahead_of(pod):
        row = table.index.get(node)
        if row is not None and cache.pod_node(other.uid) is None:
            table.add_pod(row, other)
            added.setdefault(row, []).append(other)
    try:
        yield
    finally:
        for row, pods in added.items():
            for other in pods:
                table.remove_pod(row, other.uid)


def second_pass(
    fw: Framework,
    pod: PodInfo,
    table: NodeTable,
    rows: Rows,
    added: dict[int, list[PodInfo]],
    diagnosis: Diagnosis,
) -> Rows:
    """kube-scheduler's second filter pass: a node counted with nominated pods must also pass without them.

    Pod affinity, for one, may hold only thanks to a nominated pod that may yet land elsewhere.
    """
    again = np.isin(rows, np.fromiter(added, dtype=np.intp, count=len(added)))
    if not again.any():
        return rows
    for row, pods in added.items():
        for other in pods:
            table.remove_pod(row, other.uid)
    try:
        state = CycleState()
        status = fw.run_pre_filter(state, pod, table).status
        if status.rejected:
            passed = rows[:0]
            diagnosis.add(rows[again], np.ones(int(again.sum()), dtype=np.int32), (status,))
        else:
            passed = fw.run_filter(state, pod, NodeBatch(table, rows[again]), diagnosis)
    finally:
        for row, pods in added.items():
            for other in pods:
                table.add_pod(row, other)
    keep = ~again
    keep[np.flatnonzero(again)[np.isin(rows[again], passed)]] = True
    kept: Rows = rows[keep]
    return kept


def hint_passes(
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    hinted: int,
    pre: PreFilterResult,
    added: dict[int, list[PodInfo]],
) -> bool:
    """Whether the batch's hinted node passes (and passes the second pass too, if it had nominated pods)."""
    if not fits(fw, state, pod, table, hinted, pre):
        return False
    if hinted not in added:
        return True
    return bool(len(second_pass(fw, pod, table, np.array([hinted]), added, Diagnosis())))


def fits(fw: Framework, state: CycleState, pod: PodInfo, table: NodeTable, row: int, pre: PreFilterResult) -> bool:
    if not pre.allows(table.names[row]):
        return False
    return fw.passes(state, pod, table, row)


def try_nominated(
    fw: Framework, state: CycleState, pod: PodInfo, table: NodeTable, pre: PreFilterResult, node: str
) -> Rows | None:
    """The pod's nominated ``node`` as one row, if it passes (kube-scheduler's evaluateNominatedNode)."""
    row = table.index.get(node)
    if row is None or not fits(fw, state, pod, table, row, pre):
        return None
    return np.array([row], dtype=np.intp)
