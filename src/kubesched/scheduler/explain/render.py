"""An explanation as text, in the manner of `kubectl describe`: the answer first, then the evidence."""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.scheduler.explain.model import Explanation, NodeExplanation

MAX_NODES_SHOWN = 50  # text lists this many nodes; -o json has every one


def text(ex: Explanation, all_nodes: bool = False) -> str:
    lines: list[str] = []
    add = lines.append
    add(f"Pod:                 {ex.pod}")
    rec = ex.recorded
    if rec is not None:
        add(f"Recorded:            {rec.result} at {rec.time}, attempt {rec.attempts} (scheduler {rec.scheduler})")
        add(f"  Node:              {rec.node or '<none>'}")
        if rec.message:
            add(f"  Message:           {rec.message}")
        if rec.nominated_node:
            add(f"  Nominated node:    {rec.nominated_node}")
        if not ex.nodes:
            lines.extend(f"Note:                {note}" for note in ex.notes)
            return "\n".join(lines) + "\n"
        add("Now (evaluated afresh on the cluster as it is):")
    add(f"Profile:             {ex.profile} (Kubernetes {ex.kubernetes_version})")
    if ex.bound_to:
        add(f"Bound to:            {ex.bound_to} (explained as if it were pending now)")
    if ex.node:
        margin = f", {ex.margin} points ahead of {ex.runner_up}" if ex.runner_up is not None else ""
        add(f"Node:                {ex.node}{margin}")
    else:
        add("Node:                <none>")
        add(f"Message:             {ex.message}")
    if ex.sample is not None:
        s = ex.sample
        scores_n = min(s.nodes_to_find, s.feasible)
        add(
            f"Feasible:            {s.feasible} of {len(ex.nodes)} node(s); kube-scheduler scores {scores_n}"
            f" (percentageOfNodesToScore {s.percentage_of_nodes_to_score or 'adaptive'})"
        )
    for note in ex.notes:
        add(f"Note:                {note}")
    if ex.pre_filter:
        add("PreFilter:")
        rows: list[tuple[str, ...]] = [("PLUGIN", "RESULT", "DETAIL")]
        skipped = [step.plugin for step in ex.pre_filter if step.code == "Skip"]
        for step in ex.pre_filter:
            if step.code == "Skip":
                continue
            detail = step.reason or (
                f"{len(step.nodes)} node(s): {_names(step.nodes)}" if step.nodes is not None else ""
            )
            rows.append((step.plugin, step.code, detail))
        if len(rows) > 1:
            lines += _table(rows)
        if skipped:
            add(f"  Skip (nothing to check for this pod, their Filter does not run): {', '.join(skipped)}")
    if ex.nodes:
        shown = ex.nodes if all_nodes else _interesting(ex)
        more = len(ex.nodes) - len(shown)
        add("Nodes:" + (f" ({len(shown)} of {len(ex.nodes)}; --all-nodes or -o json for every one)" if more else ""))
        table: list[tuple[str, ...]] = [("NODE", "FITS", "KUBE-SCHEDULER REPORTS", "ALSO FAILED BY", "SCORE")]
        for n in shown:
            reported = f"{n.reported.plugin}: {n.reported.reason}" if n.reported is not None else ""
            others = sorted({v.plugin for v in n.failed} - ({n.reported.plugin} if n.reported else set()))
            score = str(n.total) if n.total is not None else ("-" if n.feasible else "")
            table.append(
                (
                    n.name + (" *" if n.name == ex.node else ""),
                    "yes" if n.feasible else "no",
                    reported,
                    ",".join(others),
                    score,
                )
            )
        lines += _table(table)
    scored = [n for n in ex.nodes if n.scores]
    if scored:
        add("Scores (raw → normalized × weight = weighted):")
        best = sorted(scored, key=lambda n: (-(n.total or 0), n.name))[: 5 if not all_nodes else len(scored)]
        scores: list[tuple[str, ...]] = [("NODE", "PLUGIN", "RAW", "NORMALIZED", "WEIGHT", "WEIGHTED")]
        for n in best:
            for i, sc in enumerate(n.scores):
                scores.append(
                    (
                        n.name if i == 0 else "",
                        sc.plugin,
                        str(sc.raw),
                        str(sc.normalized),
                        str(sc.weight),
                        str(sc.weighted),
                    )
                )
            scores.append(("", "total", "", "", "", str(n.total)))
        lines += _table(scores)
    if ex.preemption is not None:
        p = ex.preemption
        add("Preemption:")
        add(f"  Nominated node:    {p.nominated_node or '<none>'}")
        add(f"  Victims:           {', '.join(p.victims) or '<none>'}")
    if ex.help:
        add("What would help:")
        for i, h in enumerate(ex.help, 1):
            detail = f" ({h.detail})" if h.detail else ""
            add(f"  {i}. fits on {h.nodes} more node(s) {h.change}{detail}: {_names(h.opened, h.nodes)}")
    elif ex.node is None and ex.nodes:
        add("What would help:    no single change to the pod's spec opens a node")
    return "\n".join(lines) + "\n"


def _interesting(ex: Explanation) -> list[NodeExplanation]:
    """The chosen node, the top-scored ones, then one of each distinct rejection, up to MAX_NODES_SHOWN."""
    if len(ex.nodes) <= MAX_NODES_SHOWN:
        return list(ex.nodes)
    picked: dict[str, NodeExplanation] = {}
    for n in sorted((n for n in ex.nodes if n.total is not None), key=lambda n: -(n.total or 0))[:10]:
        picked[n.name] = n
    seen: set[str] = set()
    for n in ex.nodes:
        reason = n.reported.reason if n.reported is not None else ""
        if reason and reason not in seen and len(picked) < MAX_NODES_SHOWN:
            seen.add(reason)
            picked[n.name] = n
    for n in ex.nodes:
        if len(picked) >= MAX_NODES_SHOWN:
            break
        picked.setdefault(n.name, n)
    order = {n.name: i for i, n in enumerate(ex.nodes)}
    return sorted(picked.values(), key=lambda n: order[n.name])


def _names(names: Sequence[str] | None, total: int | None = None) -> str:
    names = list(names or ())
    count = total if total is not None else len(names)
    shown = ", ".join(names[:5])
    return shown + (f" and {count - 5} more" if count > 5 else "")


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
