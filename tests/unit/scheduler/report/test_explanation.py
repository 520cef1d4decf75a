"""`explain -o html` opened in Chromium: the node × plugin table, the score charts, the FitError, what would help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kubesched.scheduler.explain.offline import explain_file
from kubesched.scheduler.report.explanation import write_explanation
from tests.unit.scheduler.report.browser import Browser

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"

# Per row of the node table: its node, its cells' classes and tooltips.
ROWS_JS = """() => Array.from(document.querySelectorAll('#node-table tbody tr')).map(r => ({
  node: r.dataset.node, chosen: r.classList.contains('chosen'),
  cells: Array.from(r.querySelectorAll('td')).map(td => [td.className, td.title || '', td.innerText])}))"""
HEADER_JS = "() => Array.from(document.querySelectorAll('#node-table thead th')).map(th => th.innerText)"


def test_a_pod_that_lands_its_table_and_score_charts(browser: Browser, tmp_path: Path) -> None:
    ex = explain_file(EXAMPLES / "cluster.yaml", "shop/web-0")
    assert ex.node is not None
    path = tmp_path / "web-0.html"
    write_explanation(ex, path)
    opened = browser.open(path)
    opened.assert_clean(path.resolve().as_uri())
    opened.assert_charts_drawn({"scores-raw-normalized", "scores-weighted"})
    header = opened.evaluate(HEADER_JS)
    # One column per Filter plugin of the profile, in its order, after node, fits and what kube-scheduler reports.
    assert header == ["node", "fits", "kube-scheduler reports", *ex.filter_plugins, "score"]
    assert "NodeResourcesFit" in header
    rows = {r["node"]: r for r in opened.evaluate(ROWS_JS)}
    assert set(rows) == {n.name for n in ex.nodes}
    assert [name for name, r in rows.items() if r["chosen"]] == [ex.node]
    for n in ex.nodes:
        cells = rows[n.name]["cells"]
        failing = [i for i, (cls, _, _) in enumerate(cells) if cls in ("fail", "reported")]
        assert sorted(header[i] for i in failing) == sorted({v.plugin for v in n.failed})
        if n.reported is None:
            assert failing == [] and n.feasible and cells[2][2] == ""
            continue
        # The failure kube-scheduler reports is the highlighted cell, its reason the tooltip.
        cls, title, _ = cells[header.index(n.reported.plugin)]
        assert cls == "reported" and n.reported.reason in title
        assert cells[2][2] == f"{n.reported.plugin}: {n.reported.reason}"
        assert [c for c, _, _ in cells].count("reported") == 1
    # The weighted chart: one trace per Score plugin, its bars the weighted scores of the best nodes.
    traces = opened.evaluate(
        "() => document.querySelector('[data-chart=scores-weighted]').data.map(t => [t.name, t.y])"
    )
    best = max((n for n in ex.nodes if n.scores), key=lambda n: n.total or 0)
    assert {name for name, _ in traces} == {s.plugin for s in best.scores}
    assert sum(ys[0] for _, ys in traces) == best.total


def test_a_pending_pod_its_message_and_what_would_help(browser: Browser, tmp_path: Path) -> None:
    ex = explain_file(EXAMPLES / "cluster.yaml", "ml/huge-0")
    assert ex.node is None and ex.help and ex.message.startswith("0/")
    path = tmp_path / "huge-0.html"
    write_explanation(ex, path)
    opened = browser.open(path)
    opened.assert_clean(path.resolve().as_uri())
    opened.assert_charts_drawn(set())  # nothing scored: no chart, and no plotly.js either
    assert opened.evaluate("() => document.getElementById('fit-error').innerText") == ex.message
    helps = opened.evaluate("() => Array.from(document.querySelectorAll('ol.help li')).map(li => li.innerText)")
    assert len(helps) == len(ex.help) and f"fits on {ex.help[0].nodes} more node(s)" in helps[0]
    reported = opened.evaluate("() => document.querySelectorAll('#node-table td.reported').length")
    assert reported == sum(1 for n in ex.nodes if n.reported) > 0
    assert path.stat().st_size < 200_000


def test_names_are_data_never_markup(browser: Browser, tmp_path: Path) -> None:
    ex = explain_file(EXAMPLES / "cluster.yaml", "shop/web-0")
    ex.notes.append('<img src=x onerror="document.title=1"></script><script>alert(1)</script>')
    ex.nodes[0].name = "</script><b id=owned>x</b>"
    path = tmp_path / "hostile.html"
    write_explanation(ex, path)
    opened = browser.open(path)
    opened.assert_clean(path.resolve().as_uri())
    assert opened.evaluate("() => [document.getElementById('owned'), document.querySelectorAll('img').length]") == [
        None,
        0,
    ]
    assert "</script><b id=owned>x</b>" in json.dumps(opened.evaluate(ROWS_JS))


def test_the_command_writes_the_page() -> None:
    cluster = str(EXAMPLES / "cluster.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "kubesched", "explain", "shop/web-0", "--cluster", cluster, "-o", "html"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<!DOCTYPE html>") and "Plotly.newPlot" in done.stdout
    assert "<script src" not in done.stdout and "<link" not in done.stdout


def test_a_big_cluster_is_bounded() -> None:
    from kubesched.scheduler.explain.model import Explanation, NodeExplanation, Score, Verdict
    from kubesched.scheduler.report.explanation import MAX_SCORED_NODES, MAX_TABLE_NODES, explanation_html

    nodes = [
        NodeExplanation(
            f"n-{i}",
            i % 2 == 0,
            None if i % 2 == 0 else Verdict("NodeResourcesFit", "Unschedulable", "Insufficient cpu"),
            [] if i % 2 == 0 else [Verdict("NodeResourcesFit", "Unschedulable", "Insufficient cpu")],
            i % 2 == 0,
            [Score("ImageLocality", i % 100, i % 100, 1, i % 100)] if i % 2 == 0 else [],
            i % 100 if i % 2 == 0 else None,
        )
        for i in range(5000)
    ]
    ex = Explanation(
        pod="ns/p", kubernetes_version="v1.37.2", profile="default-scheduler", node="n-98", message="", nodes=nodes
    )
    page = explanation_html(ex)
    assert page.count("<tr data-node=") + page.count('<tr class="chosen" data-node=') == MAX_TABLE_NODES
    assert f"{MAX_TABLE_NODES} of 5000 nodes shown" in page
    assert f"The {MAX_SCORED_NODES} best of 2500 scored nodes shown" in page
    assert 'data-node="n-98"' in page.split("</tr>")[1]  # the chosen node is the first row


def test_a_recorded_decision_alone(browser: Browser, tmp_path: Path) -> None:
    from kubesched.scheduler.explain.model import Explanation, Recorded

    rec = Recorded("http://127.0.0.1:10251", "Unschedulable", None, "0/3 nodes are available: 3 Insufficient cpu.")
    ex = Explanation(
        pod="shop/web-0",
        kubernetes_version="v1.37.2",
        profile="default-scheduler",
        node=None,
        message="",
        recorded=rec,
        notes=["the cluster was not read (--scheduler alone)"],
    )
    path = tmp_path / "recorded.html"
    write_explanation(ex, path)
    opened = browser.open(path)
    opened.assert_clean(path.resolve().as_uri())
    opened.assert_charts_drawn(set())
    body = opened.evaluate("() => document.body.innerText")
    assert "Unschedulable at" in body and rec.message in body and "--scheduler alone" in body
    assert "What would help" not in body and opened.evaluate("() => document.getElementById('node-table')") is None
