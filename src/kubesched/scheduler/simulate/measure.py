"""The cluster's state in numbers, read from the scheduler's node table (what the scheduler itself counts):
per node usage, utilization spread, fragmentation of extended resources; and two runs compared."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from kubesched.core.nodetable import NodeTable
from kubesched.scheduler.simulate.model import (
    ZONE_LABEL,
    Aggregate,
    Comparison,
    Delta,
    Fragmentation,
    NodeState,
    PodDecision,
    PodDifference,
    Run,
    Spread,
    Usage,
)

BASIC = ("cpu", "memory")


def extended(table: NodeTable) -> list[str]:
    """The extended resources some node offers (domain-prefixed names: nvidia.com/gpu, example.com/foo)."""
    names: set[str] = set()
    for _, node in table.live_nodes():
        names.update(r for r in node.status.allocatable or {} if "/" in r)
    return sorted(names)


def node_states(table: NodeTable, resources: Iterable[str]) -> list[NodeState]:
    """Every node, in name order: zone, cordon, pod count, and each resource's requested and allocatable."""
    rows = table.rows()
    names = table.name_array()[rows]
    cols = {r: (table.requested(r)[rows], table.allocatable(r)[rows]) for r in (*BASIC, *resources)}
    pods = table.pod_count()[rows]
    unsched = table.unschedulable()[rows]
    out = []
    for i in np.argsort(names, kind="stable").tolist():
        node = table.node(int(rows[i]))
        usage = {
            r: Usage(int(req[i]), int(alloc[i])) for r, (req, alloc) in cols.items() if r in BASIC or alloc[i] or req[i]
        }
        out.append(
            NodeState(
                str(names[i]),
                (node.metadata.labels or {}).get(ZONE_LABEL, ""),
                bool(unsched[i]),
                int(pods[i]),
                usage,
            )
        )
    return out


def _round(x: float) -> float:
    return round(float(x), 4)


def aggregate(
    table: NodeTable, resources: list[str], *, used: int, placed: int, pending: int, preemptions: int
) -> Aggregate:
    rows = table.rows()
    schedulable = rows[~table.unschedulable()[rows]]
    spread = []
    for r in BASIC:
        alloc = table.allocatable(r)[schedulable]
        has = alloc > 0
        ratio: npt.NDArray[np.float64] = table.requested(r)[schedulable][has] / alloc[has]
        if len(ratio):
            p50, p99 = np.percentile(ratio, [50, 99])
            spread.append(Spread(r, _round(p50), _round(p99), _round(ratio.mean()), _round(ratio.max())))
        else:
            spread.append(Spread(r, 0.0, 0.0, 0.0, 0.0))
    fragmentation = []
    for r in resources:
        alloc = table.allocatable(r)[schedulable]
        has = alloc > 0
        alloc, req = alloc[has], table.requested(r)[schedulable][has]
        free = np.maximum(alloc - req, 0)
        partial = (req > 0) & (free > 0)
        fragmentation.append(
            Fragmentation(
                r,
                int(has.sum()),
                int(partial.sum()),
                int(free[partial].sum()),
                int(free.sum()),
                int(free.max()) if len(free) else 0,
            )
        )
    return Aggregate(
        nodes=len(rows),
        nodes_used=used,
        pods_bound=int(table.pod_count()[rows].sum()),
        pods_placed=placed,
        pods_pending=pending,
        preemptions=preemptions,
        spread=spread,
        fragmentation=fragmentation,
    )


def _numbers(agg: Aggregate) -> dict[str, float]:
    out: dict[str, float] = {
        "podsPlaced": agg.pods_placed,
        "podsPending": agg.pods_pending,
        "nodesUsed": agg.nodes_used,
        "preemptions": agg.preemptions,
    }
    for s in agg.spread:
        out[f"{s.resource}.p50"] = s.p50
        out[f"{s.resource}.p99"] = s.p99
    for f in agg.fragmentation:
        out[f"{f.resource}.partiallyUsedNodes"] = f.partially_used
        out[f"{f.resource}.stranded"] = f.stranded
        out[f"{f.resource}.largestFree"] = f.largest_free
    return out


def compare(a: Run, b: Run, a_final: list[PodDecision], b_final: list[PodDecision]) -> Comparison:
    """Pod by pod (end states) and in aggregate (after the last step)."""
    got_b = {d.pod: d for d in b_final}
    keys = [d.pod for d in a_final] + [k for k in got_b if k not in {d.pod for d in a_final}]
    got_a = {d.pod: d for d in a_final}
    out = Comparison()
    for key in keys:
        da, db = got_a.get(key), got_b.get(key)
        na, nb = da.node if da else None, db.node if db else None
        if na == nb:
            out.same += 1
            continue
        out.pods.append(
            PodDifference(
                key, na, nb, (da.message if da and na is None else ""), (db.message if db and nb is None else "")
            )
        )
    last_a = a.steps[-1].aggregate if a.steps else a.initial_aggregate
    last_b = b.steps[-1].aggregate if b.steps else b.initial_aggregate
    if last_a is not None and last_b is not None:
        num_a, num_b = _numbers(last_a), _numbers(last_b)
        out.aggregate = [Delta(k, num_a[k], num_b.get(k, 0.0)) for k in num_a] + [
            Delta(k, 0.0, v) for k, v in num_b.items() if k not in num_a
        ]
    return out
