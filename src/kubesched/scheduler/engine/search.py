"""The node search of a scheduling cycle: nominated pods counted, the nominated or hinted node tried, Filter.

Module functions over the cache's NodeTable that `Cycle._search` (cycle.py) composes: `find` filters from
a rotating start until ``numFeasibleNodesToFind`` nodes are feasible, in chunks of rows; `nominated_pods`
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
from kubesched.framework.build import Profile
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interfaces import CycleState, NodeBatch, PreFilterResult
from kubesched.framework.runtime import Framework
from kubesched.scheduler.engine.extenders import Extenders
from kubesched.scheduler.engine.nominator import Nominator

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
    nominator: Nominator, fw: Framework, state: CycleState, pod: PodInfo, table: NodeTable, pre: PreFilterResult
) -> Rows | None:
    node = nominator.node_of(pod.uid) or pod.pod.status.nominated_node_name
    row = table.index.get(node) if node else None
    if row is None or not fits(fw, state, pod, table, row, pre):
        return None
    return np.array([row], dtype=np.intp)


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
