"""`kubesched simulate --report out.html`: a simulation as a page: utilization per node and per zone before,
through and after the steps (heat maps), the pending pods grouped by kube-scheduler's message, the
aggregates step by step, and with ``--compare`` the A/B differences in aggregate and pod by pod."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from kubesched.scheduler.report.page import Page
from kubesched.scheduler.simulate.model import BUCKETS, Aggregate, NodeState, Run, Simulation

MAX_HEAT_NODES = 300  # rows of a node heat map (the busiest at the end); the zone map has every zone
MAX_POD_ROWS = 500  # rows of the pod-by-pod difference table
MAX_REASONS = 200  # rows of the pending-by-message table (the most pods first); the chart has the first 30
MAX_REASON_LABEL = 90  # characters of a message on a chart's axis (the table has it whole)


def simulation_html(sim: Simulation) -> str:
    title = f"kubesched simulate {sim.scenario_name or sim.scenario}"
    page = Page(title, f"Kubernetes {sim.kubernetes_version}, seed {sim.seed}")
    facts = [("Cluster", sim.cluster), ("Scenario", sim.scenario), ("Seed", str(sim.seed))]
    for run in sim.runs:
        profiles = f" (profiles: {', '.join(run.profiles)})" if run.profiles else ""
        facts.append((f"Configuration {run.label}", (run.config or "kube-scheduler's defaults") + profiles))
    if not sim.records:
        facts.append(("Records", "off (--no-records): aggregates only, no per-node or per-pod charts"))
    page.facts(facts)
    if sim.comparison is not None and len(sim.runs) == 2:
        _comparison(page, sim)
    for run in sim.runs:
        page.heading(f"Configuration {run.label}" + (f": {run.config}" if run.config else ""))
        _aggregates(page, run)
        _heat_maps(page, run)
        _pending(page, run)
        _scores(page, run)
    return page.html()


def write_report(sim: Simulation, path: Path) -> None:
    """Write the report of ``sim`` to ``path``: one HTML file that needs nothing else (plotly.js inlined)."""
    path.write_text(simulation_html(sim), encoding="utf-8")


def _go() -> Any:
    import plotly.graph_objects as go  # plotly loads only when a report is written

    return go


def _comparison(page: Page, sim: Simulation) -> None:
    assert sim.comparison is not None
    cmp, (a, b) = sim.comparison, sim.runs
    go = _go()
    page.heading(f"A/B: {a.label} ({a.config or 'defaults'}) against {b.label} ({b.config or 'defaults'})")
    if cmp.aggregate:
        page.table(
            ["metric", a.label, b.label, f"{b.label} − {a.label}"],
            ([d.metric, _num(d.a), _num(d.b), _num(d.b - d.a)] for d in cmp.aggregate),
            numeric=frozenset({1, 2, 3}),
            name="ab-aggregate",
        )
        counts = [d for d in cmp.aggregate if "." not in d.metric or d.metric.split(".")[-1] in _COUNTS]
        ratios = [d for d in cmp.aggregate if d not in counts]
        for name, deltas, title in (
            ("ab-counts", counts, "pods and nodes (the last step)"),
            ("ab-utilization", ratios, "utilization, requested/allocatable (the last step)"),
        ):
            if not deltas:
                continue
            fig = go.Figure(
                [
                    go.Bar(x=[d.metric for d in deltas], y=[getattr(d, side) for d in deltas], name=label)
                    for side, label in (("a", a.label), ("b", b.label))
                ]
            )
            fig.update_layout(barmode="group", title=title, height=360, margin={"t": 50, "b": 90})
            page.chart(fig, name)
    landed = {run.label: Counter(d.node for d in run.final if d.node) for run in (a, b)}
    nodes = sorted(set(landed[a.label]) | set(landed[b.label]))
    if nodes:
        fig = go.Figure(
            [go.Bar(x=nodes, y=[landed[run.label].get(n, 0) for n in nodes], name=run.label) for run in (a, b)]
        )
        fig.update_layout(
            barmode="group", title="scenario pods per node at the end", height=360, margin={"t": 50, "b": 90}
        )
        page.chart(fig, "ab-pods-per-node")
    page.heading("Pods that ended differently", 3)
    page.paragraph(f"{len(cmp.pods)} pod(s) differ, {cmp.same} ended the same under both.", "note")
    if cmp.pods:
        page.table(
            ["pod", f"node under {a.label}", f"node under {b.label}", f"{a.label}: message", f"{b.label}: message"],
            ([p.pod, p.a or "pending", p.b or "pending", p.a_message, p.b_message] for p in cmp.pods[:MAX_POD_ROWS]),
            name="ab-pods",
        )
        if len(cmp.pods) > MAX_POD_ROWS:
            page.paragraph(f"The first {MAX_POD_ROWS} of {len(cmp.pods)} shown (-o json has every one).", "note")


_COUNTS = {"partiallyUsedNodes", "stranded", "largestFree", "free", "nodes"}


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}"


def _aggregates(page: Page, run: Run) -> None:
    rows: list[tuple[str, Aggregate]] = []
    if run.initial_aggregate is not None:
        rows.append(("before", run.initial_aggregate))
    rows += [(f"{s.index}: {s.name}", s.aggregate) for s in run.steps]
    if not rows:
        return
    page.heading("The cluster step by step", 3)
    resources = sorted({sp.resource for _, agg in rows for sp in agg.spread})

    def mean(agg: Aggregate, resource: str) -> str:
        return next((f"{sp.mean:.3f}" for sp in agg.spread if sp.resource == resource), "")

    page.table(
        ["step", "nodes", "nodes used", "pods bound", "pods placed", "pods pending", "preemptions"]
        + [f"{r} mean" for r in resources],
        (
            [name, g.nodes, g.nodes_used, g.pods_bound, g.pods_placed, g.pods_pending, g.preemptions]
            + [mean(g, r) for r in resources]
            for name, g in rows
        ),
        numeric=frozenset(range(1, 7 + len(resources))),
        name=f"steps-{run.label}",
    )
    go = _go()
    x = ["before"] * (run.initial_aggregate is not None) + [f"step {s.index}" for s in run.steps]
    fig = go.Figure(
        [
            go.Scatter(x=x, y=[getattr(g, field) for _, g in rows], name=label, mode="lines+markers")
            for field, label in (
                ("pods_placed", "pods placed"),
                ("pods_pending", "pods pending"),
                ("nodes_used", "nodes used"),
                ("preemptions", "preemptions"),
            )
        ]
    )
    fig.update_layout(
        title="pods and nodes after each step", height=340, margin={"t": 50, "b": 50}, xaxis={"type": "category"}
    )
    page.chart(fig, f"steps-{run.label}")


def _states(run: Run) -> list[tuple[str, list[NodeState]]]:
    """The cluster before the steps and after each: ("before" or "after step N: its name", its nodes)."""
    states = [("before", run.initial)] if run.initial else []
    return states + [
        (f"after step {s.index}" + (f": {s.name}" if s.name else ""), s.nodes) for s in run.steps if s.nodes
    ]


def _heat_maps(page: Page, run: Run) -> None:
    states = _states(run)
    if not states:
        page.paragraph("No per-node states recorded (records off): no heat maps.", "note")
        return
    resources = sorted({r for _, nodes in states for n in nodes for r in n.resources}, key=_resource_order)
    page.heading("Utilization, requested/allocatable: per node and per zone, before and after each step", 3)
    last = {n.name: n for n in states[-1][1]}
    ever: dict[str, NodeState] = {}
    for _, nodes in states:
        ever.update({n.name: n for n in nodes})
    for resource in resources:
        names = sorted(ever, key=lambda n: (-_ratio(last.get(n), resource), n))[:MAX_HEAT_NODES]
        per_node = [{n.name: n for n in nodes} for _, nodes in states]
        z: list[list[float | None]] = []
        text: list[list[str]] = []
        for name in names:
            row: list[float | None] = []
            tips: list[str] = []
            for state in per_node:
                node = state.get(name)
                usage = node.resources.get(resource) if node is not None else None
                if usage is None or usage.allocatable <= 0:
                    row.append(None)
                    tips.append("not in the cluster" if node is None else f"no {resource}")
                else:
                    row.append(usage.requested / usage.allocatable)
                    tips.append(f"{_qty(resource, usage.requested)} of {_qty(resource, usage.allocatable)}")
            tips = [f"{tip}; {state}" for tip, (state, _) in zip(tips, states, strict=True)]
            z.append(row)
            text.append(tips)
        marked = [n + (" (cordoned)" if last.get(n) is not None and last[n].unschedulable else "") for n in names]
        _heat_map(page, z, text, _columns(states), marked, f"{resource} per node", f"nodes-{run.label}-{resource}")
        zones = sorted({n.zone or "(no zone)" for n in ever.values()})
        zz: list[list[float | None]] = []
        ztext: list[list[str]] = []
        for zone in zones:
            row, tips = [], []
            for _, nodes in states:
                req = alloc = 0
                for n in nodes:
                    usage = n.resources.get(resource)
                    if (n.zone or "(no zone)") == zone and usage is not None:
                        req, alloc = req + usage.requested, alloc + usage.allocatable
                row.append(req / alloc if alloc > 0 else None)
                tips.append(f"{_qty(resource, req)} of {_qty(resource, alloc)}")
            tips = [f"{tip}; {state}" for tip, (state, _) in zip(tips, states, strict=True)]
            zz.append(row)
            ztext.append(tips)
        _heat_map(page, zz, ztext, _columns(states), zones, f"{resource} per zone", f"zones-{run.label}-{resource}")


def _columns(states: list[tuple[str, list[NodeState]]]) -> list[str]:
    """Short column labels ("before", "step 0", …); the hover text names the step."""
    return [name.split(":")[0].removeprefix("after ") for name, _ in states]


def _heat_map(
    page: Page, z: list[list[float | None]], text: list[list[str]], x: list[str], y: list[str], title: str, name: str
) -> None:
    go = _go()
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=x,
            y=y,
            text=text,
            zmin=0,
            zmax=1,
            colorscale="YlOrRd",
            colorbar={"title": {"text": "used"}, "tickformat": ".0%"},
            hovertemplate="%{y}: %{z:.0%} used (%{text})<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    fig.update_layout(
        title=title,
        height=min(8000, 150 + 24 * max(len(y), 4)),
        margin={"t": 50, "l": 180, "b": 50},
        yaxis={"autorange": "reversed", "type": "category", "dtick": 1},
        xaxis={"type": "category"},
    )
    page.chart(fig, name)


def _resource_order(resource: str) -> tuple[int, str]:
    return ({"cpu": 0, "memory": 1}.get(resource, 2), resource)


def _ratio(node: NodeState | None, resource: str) -> float:
    usage = node.resources.get(resource) if node is not None else None
    return usage.requested / usage.allocatable if usage is not None and usage.allocatable > 0 else -1.0


def _qty(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value / 1000:g} cpu"
    if resource in ("memory", "ephemeral-storage"):
        return f"{value / 2**30:.1f} GiB"
    return str(value)


def _pending(page: Page, run: Run) -> None:
    if not run.final:
        return
    by_reason: dict[str, list[str]] = defaultdict(list)
    for d in run.final:
        if d.node is None:
            by_reason[d.message or "(no message)"].append(
                d.pod + (f" (nominated {d.nominated})" if d.nominated else "")
            )
    page.heading("Pending pods at the end, by kube-scheduler's message", 3)
    if not by_reason:
        page.paragraph(f"Every one of the {len(run.final)} scenario pods is bound.", "note")
        return
    every = sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    groups = every[:MAX_REASONS]
    if len(every) > len(groups):
        rest = sum(len(pods) for _, pods in every[MAX_REASONS:])
        page.paragraph(f"The {MAX_REASONS} most frequent of {len(every)} messages shown; {rest} pod(s) more.", "note")
    page.table(
        ["pods", "message", "which"],
        ([len(pods), reason, ", ".join(pods[:20]) + (" …" if len(pods) > 20 else "")] for reason, pods in groups),
        numeric=frozenset({0}),
        name=f"pending-{run.label}",
    )
    go = _go()
    groups = groups[:30]
    labels = [_short(reason, i) for i, (reason, _) in enumerate(groups)]
    fig = go.Figure(
        go.Bar(
            y=labels,
            x=[len(pods) for _, pods in groups],
            orientation="h",
            customdata=[reason for reason, _ in groups],
            hovertemplate="%{x} pod(s): %{customdata}<extra></extra>",
        )
    )
    fig.update_layout(
        title="pending pods per message",
        height=min(900, 120 + 40 * len(groups)),
        margin={"t": 50, "l": 420},
        yaxis={"autorange": "reversed", "type": "category"},
    )
    page.chart(fig, f"pending-{run.label}")


def _short(reason: str, index: int) -> str:
    text = reason if len(reason) <= MAX_REASON_LABEL else reason[: MAX_REASON_LABEL - 1] + "…"
    return f"{index + 1}. {text}"  # numbered: two messages cut to the same prefix stay two bars


def _scores(page: Page, run: Run) -> None:
    """Per Score plugin: how its normalized scores fell, over every node scored and on the chosen nodes."""
    scores = [d for d in run.scores if d.cycles > 0]
    if not scores:
        return
    from plotly.subplots import make_subplots

    go = _go()
    page.heading("Score distributions per plugin", 3)
    page.paragraph(
        "Each Score plugin's normalized score (0-100) over the scheduling cycles that scored, as shares: of every"
        " node scored, and of the node chosen. A plugin whose chosen share sits right of its scored share pulled"
        " the choice; one that is flat did not tell the nodes apart.",
        "note",
    )
    buckets = [f"{10 * i}-{10 * i + 9}" for i in range(BUCKETS - 1)] + ["100"]
    fig = make_subplots(
        rows=len(scores),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=min(0.08, 0.3 / len(scores)),
        subplot_titles=[f"{d.plugin} (weight {d.weight}, {d.cycles} cycles)" for d in scores],
    )
    for row, d in enumerate(scores, start=1):
        for label, counts, color in (("every node scored", d.scored, "#9db4d0"), ("chosen node", d.chosen, "#c83a2a")):
            total = sum(counts) or 1
            fig.add_trace(
                go.Bar(
                    x=buckets,
                    y=[c / total for c in counts],
                    customdata=counts,
                    name=label,
                    legendgroup=label,
                    showlegend=row == 1,
                    marker_color=color,
                    hovertemplate=f"{d.plugin}, {label}: %{{y:.0%}} (%{{customdata}}) scored %{{x}}<extra></extra>",
                ),
                row=row,
                col=1,
            )
    fig.update_layout(barmode="group", height=140 + 170 * len(scores), margin={"t": 60, "b": 50})
    fig.update_yaxes(tickformat=".0%")
    page.chart(fig, f"scores-{run.label}")
