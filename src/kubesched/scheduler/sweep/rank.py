"""A sweep's results ranked: one row per configuration, its objective the mean over the scenarios, as JSON
(kind SweepResult, `kubesched.io/v1alpha1`), a text table and a self-contained HTML report."""

from __future__ import annotations

import html

import msgspec

from kubesched.scheduler.sweep.cell import CellResult
from kubesched.scheduler.sweep.spec import Sweep

API_VERSION = "kubesched.io/v1alpha1"
KIND = "SweepResult"
SHOWN = ("podsPlaced", "podsPending", "nodesUsed", "cpu.spread", "memory.spread")


class Ranked(msgspec.Struct, rename="camel", kw_only=True):
    """One configuration: its rank (1 is best; equal objectives share a rank; a configuration with a failed
    cell comes last, unranked: rank 0), what it sets, its objective and metrics averaged over the scenarios."""

    rank: int
    id: str
    label: str
    settings: dict[str, str]
    objective: float | None
    metrics: dict[str, float]
    errors: list[str] = msgspec.field(default_factory=list)


class SweepResult(msgspec.Struct, rename="camel", kw_only=True):
    api_version: str = API_VERSION
    kind: str = KIND
    name: str
    objective: str
    kubernetes_version: str
    seed: int
    engine: str
    cluster: str
    scenarios: list[str]
    configurations: list[Ranked]
    cells: list[CellResult]


def rank(sweep: Sweep, cells: list[CellResult], *, engine: str, kubernetes_version: str) -> SweepResult:
    by_config: dict[str, list[CellResult]] = {}
    for cell in cells:
        by_config.setdefault(cell.config, []).append(cell)
    rows: list[Ranked] = []
    for c in sweep.configurations:
        mine = by_config.get(c.id, [])
        errors = [f"scenario {r.scenario}: {r.error}" for r in mine if r.error]
        names = sorted({m for r in mine for m in r.metrics})
        ok = [r for r in mine if not r.error]
        means = {m: round(sum(r.metrics.get(m, 0.0) for r in ok) / len(ok), 6) for m in names} if ok else {}
        objective = None
        if ok and not errors:
            objective = round(sum(sweep.objective.value(r.metrics) for r in ok) / len(ok), 6)
        rows.append(
            Ranked(
                rank=0,
                id=c.id,
                label=c.label,
                settings=dict(c.settings),
                objective=objective,
                metrics=means,
                errors=errors,
            )
        )
    order = {c.id: i for i, c in enumerate(sweep.configurations)}
    rows.sort(key=lambda r: (r.objective is None, -(r.objective or 0.0), order[r.id]))
    previous: float | None = None
    for position, row in enumerate(rows, 1):
        if row.objective is None:
            continue
        row.rank = rows[position - 2].rank if previous is not None and row.objective == previous else position
        previous = row.objective
    return SweepResult(
        name=sweep.name,
        objective=sweep.objective.text,
        kubernetes_version=kubernetes_version,
        seed=sweep.seed,
        engine=engine,
        cluster=str(sweep.cluster),
        scenarios=[str(s) for s in sweep.scenarios],
        configurations=rows,
        cells=cells,
    )


def columns(result: SweepResult, metric_names: list[str]) -> list[str]:
    return list(dict.fromkeys([*metric_names, *SHOWN]))


def table(result: SweepResult, metric_names: list[str]) -> tuple[list[str], list[list[str]]]:
    """The ranking as a header and rows of text (the CLI prints it with rich at a terminal)."""
    cols = columns(result, metric_names)
    header = ["rank", "config", "settings", "objective", *cols]
    rows = []
    for r in result.configurations:
        rows.append(
            [
                str(r.rank) if r.rank else "-",
                r.id,
                r.label,
                "failed" if r.objective is None else f"{r.objective:g}",
                *(f"{r.metrics[c]:g}" if c in r.metrics else "" for c in cols),
            ]
        )
    return header, rows


def text(result: SweepResult, metric_names: list[str]) -> str:
    header, rows = table(result, metric_names)
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = [
        f"Sweep {result.name or ''}: {len(result.configurations)} configuration(s) × {len(result.scenarios)} "
        f"scenario(s) = {len(result.cells)} cells on {result.engine}; {result.objective} "
        f"(mean over the scenarios; Kubernetes {result.kubernetes_version}, seed {result.seed})".replace("  ", " "),
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
    ]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    for r in result.configurations:
        lines += [f"{r.id}: {e}" for e in r.errors[:5]]
    return "\n".join(lines) + "\n"


def report(result: SweepResult, metric_names: list[str]) -> str:
    """One HTML file, nothing fetched: the ranking with a bar per objective value, and every cell."""
    header, rows = table(result, metric_names)
    values = [r.objective for r in result.configurations if r.objective is not None]
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    body = []
    for r, row in zip(result.configurations, rows, strict=True):
        width = 100.0 if high == low else 5 + 95 * ((r.objective or low) - low) / (high - low)
        bar = f'<div class="bar" style="width:{width:.1f}%"></div>' if r.objective is not None else ""
        cells = "".join(f"<td>{html.escape(v)}</td>" for v in row)
        body.append(f"<tr>{cells}<td class='barcell'>{bar}</td></tr>")
    cell_rows = "".join(
        f"<tr><td>{html.escape(c.id)}</td><td>{html.escape(result.scenarios[c.scenario])}</td>"
        f"<td>{html.escape(c.error or ', '.join(f'{k} {v:g}' for k, v in sorted(c.metrics.items())))}</td>"
        f"<td>{c.seconds:.2f}</td></tr>"
        for c in result.cells
    )
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    title = html.escape(f"kubesched sweep {result.name}".strip())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 2em; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; font-size: 14px; }}
th {{ background: #f4f4f4; }}
.barcell {{ width: 200px; }} .bar {{ background: #4c78a8; height: 12px; }}
</style></head><body>
<h1>{title}</h1>
<p>{html.escape(result.objective)} — mean over {len(result.scenarios)} scenario(s);
{len(result.cells)} cells on {html.escape(result.engine)}; Kubernetes {html.escape(result.kubernetes_version)},
seed {result.seed}; cluster {html.escape(result.cluster)}.</p>
<h2>Configurations, best first</h2>
<table id="ranking"><thead><tr>{head}<th></th></tr></thead><tbody>{"".join(body)}</tbody></table>
<h2>Cells</h2>
<table id="cells"><thead><tr><th>cell</th><th>scenario</th><th>metrics</th><th>seconds</th></tr></thead>
<tbody>{cell_rows}</tbody></table>
</body></html>
"""
