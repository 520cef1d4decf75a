"""`kubesched explain -o html`: one pod's explanation as a page: the answer, what would help, the node × Filter
plugin table (kube-scheduler's reason on each failing cell, the failure it reports highlighted) and the
scores of the nodes kube-scheduler scores, raw, normalized and weighted, per plugin."""

from __future__ import annotations

from pathlib import Path

from kubesched.scheduler.explain.model import Explanation, NodeExplanation
from kubesched.scheduler.report.page import Page, esc

MAX_TABLE_NODES = 2000  # rows of the node × plugin table; -o json has every node
MAX_SCORED_NODES = 40  # nodes in the score charts: the highest totals


def explanation_html(ex: Explanation) -> str:
    page = Page(f"kubesched explain {ex.pod}", f"profile {ex.profile}, Kubernetes {ex.kubernetes_version}")
    _answer(page, ex)
    _help(page, ex)
    _node_table(page, ex)
    _score_charts(page, ex)
    if ex.pre_filter:
        page.heading("PreFilter")
        page.table(
            ["plugin", "result", "detail"],
            (
                [s.plugin, s.code, s.reason or (f"{len(s.nodes)} node(s): {', '.join(s.nodes)}" if s.nodes else "")]
                for s in ex.pre_filter
            ),
        )
    return page.html()


def write_explanation(ex: Explanation, path: Path) -> None:
    path.write_text(explanation_html(ex), encoding="utf-8")


def _answer(page: Page, ex: Explanation) -> None:
    facts: list[tuple[str, str]] = [("Pod", ex.pod)]
    rec = ex.recorded
    if rec is not None:  # explain --scheduler: what the running scheduler decided, then (if any) afresh
        facts.append(("Recorded", f"{rec.result} at {rec.time}, attempt {rec.attempts} (scheduler {rec.scheduler})"))
        facts.append(("Recorded node", rec.node or "none"))
        if rec.message:
            facts.append(("Recorded message", rec.message))
        if rec.nominated_node:
            facts.append(("Recorded nomination", rec.nominated_node))
        if not ex.nodes:
            page.heading("Answer")
            page.facts(facts + [("Note", note) for note in ex.notes])
            return
        facts.append(("Now", "evaluated afresh on the cluster as it is, below"))
    if ex.bound_to:
        facts.append(("Bound to", f"{ex.bound_to} (explained as if it were pending now)"))
    if ex.node:
        lead = f", {ex.margin} points ahead of {ex.runner_up}" if ex.runner_up is not None else ""
        facts.append(("Chosen node", f"{ex.node}{lead}"))
    else:
        facts.append(("Chosen node", "none: the pod stays pending"))
    if ex.sample is not None:
        s = ex.sample
        facts.append(
            (
                "Feasible",
                f"{s.feasible} of {len(ex.nodes)} node(s); kube-scheduler scores {min(s.nodes_to_find, s.feasible)}"
                f" (percentageOfNodesToScore {s.percentage_of_nodes_to_score or 'adaptive'})",
            )
        )
    if ex.preemption is not None:
        p = ex.preemption
        facts.append(
            ("Preemption", f"nominated node {p.nominated_node or 'none'}; victims: {', '.join(p.victims) or 'none'}")
        )
    facts += [("Note", note) for note in ex.notes]
    page.heading("Answer")
    page.facts(facts)
    if ex.message:
        page.heading("kube-scheduler's message", 3)
        page.add(f'<div class="msg" id="fit-error">{esc(ex.message)}</div>')


def _help(page: Page, ex: Explanation) -> None:
    if ex.node is not None or not ex.nodes:  # placed, or only a recorded decision (nothing evaluated)
        return
    page.heading("What would help")
    if not ex.help:
        page.paragraph("No single change to the pod's spec opens a node (each one tried through the filters).", "note")
        return
    items = []
    for h in ex.help:
        opened = f": {', '.join(h.opened[:20])}{' …' if len(h.opened) > 20 else ''}" if h.opened else ""
        detail = f" ({h.detail})" if h.detail else ""
        items.append(f"<li>fits on <b>{h.nodes}</b> more node(s) {esc(h.change)}{esc(detail)}{esc(opened)}</li>")
    page.add(f'<ol class="help">{"".join(items)}</ol>')


def _columns(ex: Explanation) -> list[str]:
    columns = list(ex.filter_plugins)
    for n in ex.nodes:  # an explanation written before filterPlugins existed: the plugins that failed a node
        columns += [v.plugin for v in n.failed if v.plugin not in columns]
    return columns


def _node_table(page: Page, ex: Explanation) -> None:
    if not ex.nodes:
        return
    columns = _columns(ex)
    skipped = {s.plugin for s in ex.pre_filter if s.code == "Skip"}
    nodes = _ordered(ex)[:MAX_TABLE_NODES]
    page.heading("Nodes × Filter plugins")
    page.add(
        '<p class="legend"><span class="pass-key" style="background:#e8f6ec">✓ passes</span>'
        '<span style="background:#fde7e4">✗ fails (hover: the reason)</span>'
        '<span style="background:#c83a2a;color:#fff">✗ the failure kube-scheduler reports</span>'
        '<span style="background:#f4f5f7">– not run (PreFilter: Skip)</span></p>'
    )
    if len(ex.nodes) > len(nodes):
        page.paragraph(f"{len(nodes)} of {len(ex.nodes)} nodes shown (-o json has every one).", "note")
    head = "".join(f"<th>{esc(c)}</th>" for c in ["node", "fits", "kube-scheduler reports", *columns, "score"])
    rows = []
    for n in nodes:
        failed = {v.plugin: v for v in n.failed}
        reported = n.reported.plugin if n.reported is not None else None
        says = f"{n.reported.plugin}: {n.reported.reason}" if n.reported is not None else ""
        cells = [f"<td>{esc(n.name)}</td>", f"<td>{'yes' if n.feasible else 'no'}</td>", f"<td>{esc(says)}</td>"]
        for plugin in columns:
            verdict = failed.get(plugin)
            if verdict is not None:
                cls = "reported" if plugin == reported else "fail"
                tip = f"{verdict.code}: {verdict.reason}" if verdict.reason else verdict.code
                cells.append(f'<td class="{cls}" title="{esc(tip)}">✗</td>')
            elif plugin in skipped:
                cells.append('<td class="skip" title="PreFilter: Skip, its Filter does not run">–</td>')
            elif reported is not None and n.reported is not None and n.reported.plugin not in columns:
                cells.append('<td class="skip" title="not run">–</td>')
            else:
                cells.append('<td class="pass">✓</td>')
        score = "" if n.total is None else str(n.total)
        cells.append(f'<td class="num">{esc(score)}</td>')
        cls = ' class="chosen"' if n.name == ex.node else ""
        rows.append(f'<tr{cls} data-node="{esc(n.name)}">{"".join(cells)}</tr>')
    page.add(
        f'<div class="scroll"><table id="node-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _ordered(ex: Explanation) -> list[NodeExplanation]:
    """The chosen node, then the scored ones by total, the other feasible ones, then the rejected ones."""

    def key(n: NodeExplanation) -> tuple[int, int]:
        if n.name == ex.node:
            return (0, 0)
        if n.total is not None:
            return (1, -n.total)
        return (2, 0) if n.feasible else (3, 0)

    return sorted(ex.nodes, key=key)


PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b")


def _score_charts(page: Page, ex: Explanation) -> None:
    every = [n for n in ex.nodes if n.scores]
    scored = sorted(every, key=lambda n: -(n.total or 0))[:MAX_SCORED_NODES]
    if not scored:
        return
    import plotly.graph_objects as go  # plotly loads only when a report is written
    from plotly.subplots import make_subplots

    page.heading("Scores of the nodes kube-scheduler scores")
    shown = f" The {len(scored)} best of {len(every)} scored nodes shown." if len(scored) < len(every) else ""
    page.paragraph(
        "Per Score plugin: the raw score and the score after NormalizeScore (0-100); then times the plugin's"
        " weight, stacked to the node's total (★: the chosen node)." + shown,
        "note",
    )
    names = [n.name + (" ★" if n.name == ex.node else "") for n in scored]
    plugins: list[str] = []
    for n in scored:
        plugins += [s.plugin for s in n.scores if s.plugin not in plugins]
    grouped = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, subplot_titles=("raw", "normalized")
    )
    stacked = go.Figure()
    for i, plugin in enumerate(plugins):
        per = [{s.plugin: s for s in n.scores}.get(plugin) for n in scored]
        color = PALETTE[i % len(PALETTE)]
        for row, field in ((1, "raw"), (2, "normalized")):
            grouped.add_trace(
                go.Bar(
                    x=names,
                    y=[getattr(s, field) if s is not None else 0 for s in per],
                    name=plugin,
                    legendgroup=plugin,
                    showlegend=row == 1,
                    marker_color=color,
                    hovertemplate=f"{plugin} on %{{x}}: %{{y}} ({field})<extra></extra>",
                ),
                row=row,
                col=1,
            )
        stacked.add_trace(
            go.Bar(
                x=names,
                y=[s.weighted if s is not None else 0 for s in per],
                name=plugin,
                marker_color=color,
                customdata=[[s.normalized, s.weight] if s is not None else [0, 0] for s in per],
                hovertemplate=f"{plugin} on %{{x}}: %{{customdata[0]}} × weight %{{customdata[1]}}"
                " = %{y}<extra></extra>",
            )
        )
    grouped.update_layout(
        barmode="group", height=560, margin={"t": 60, "l": 50, "r": 20, "b": 80}, legend={"orientation": "h", "y": 1.12}
    )
    stacked.update_layout(
        barmode="stack",
        height=420,
        title="weighted (stacked: the total)",
        margin={"t": 60, "l": 50, "r": 20, "b": 80},
        yaxis_title="weighted score",
    )
    page.chart(grouped, "scores-raw-normalized")
    page.chart(stacked, "scores-weighted")
