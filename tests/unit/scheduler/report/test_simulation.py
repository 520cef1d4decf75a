"""`simulate --report` opened in Chromium: heat maps per node and per zone, pending pods by reason, the A/B."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubesched.scheduler.report.simulation import write_report
from kubesched.scheduler.simulate.model import (
    Aggregate,
    Comparison,
    NodeState,
    PodDecision,
    PodDifference,
    Run,
    Simulation,
    StepResult,
    Usage,
)
from tests.unit.scheduler.report.browser import Browser

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"

TABLES_JS = """() => Object.fromEntries(Array.from(document.querySelectorAll('table[id]')).map(t => [t.id,
  Array.from(t.querySelectorAll('tbody tr')).map(r => Array.from(r.cells).map(c => c.innerText))]))"""


def simulate(tmp_path: Path, *extra: str) -> tuple[Simulation, Path]:
    report = tmp_path / "report.html"
    cmd = [sys.executable, "-m", "kubesched", "simulate", "--cluster", str(EXAMPLES / "cluster.yaml")]
    cmd += ["--scenario", str(EXAMPLES / "scenario.yaml"), "--report", str(report), "-o", "json", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return msgspec.json.decode(done.stdout, type=Simulation), report


def chart_data(opened: Any, name: str) -> list[dict[str, Any]]:
    js = f"() => document.querySelector('[data-chart=\"{name}\"]').data.map(t => ({{x: t.x, y: t.y, z: t.z}}))"
    data: list[dict[str, Any]] = opened.evaluate(js)
    return data


def test_the_compare_report(browser: Browser, tmp_path: Path) -> None:
    sim, report = simulate(tmp_path, "--compare", str(EXAMPLES / "binpack-config.yaml"))
    assert sim.comparison is not None and len(sim.runs) == 2
    opened = browser.open(report)
    opened.assert_clean(report.resolve().as_uri())
    resources = ["cpu", "memory", "example.com/gpu"]
    expected = {"ab-counts", "ab-utilization", "ab-pods-per-node"}
    for label in ("A", "B"):
        expected |= {f"steps-{label}", f"pending-{label}", f"scores-{label}"}
        expected |= {f"{kind}-{label}-{r}" for kind in ("nodes", "zones") for r in resources}
    opened.assert_charts_drawn(expected)
    # The heat map's cells are the model's requested/allocatable: the last column is the last step.
    run = sim.runs[0]
    [heat] = chart_data(opened, "nodes-A-cpu")
    last = {n.name: n for n in run.steps[-1].nodes}
    assert len(heat["x"]) == 1 + len([s for s in run.steps if s.nodes])
    for name, row in zip(heat["y"], heat["z"], strict=True):
        node = last.get(name.removesuffix(" (cordoned)"))
        if node is None:
            assert row[-1] is None  # removed by the scenario
            continue
        usage = node.resources["cpu"]
        assert row[-1] == pytest.approx(usage.requested / usage.allocatable)
    # Zones: each zone's sums over its nodes.
    [zones] = chart_data(opened, "zones-A-cpu")
    for zone, row in zip(zones["y"], zones["z"], strict=True):
        nodes = [n for n in run.steps[-1].nodes if n.zone == zone]
        want = sum(n.resources["cpu"].requested for n in nodes) / sum(n.resources["cpu"].allocatable for n in nodes)
        assert row[-1] == pytest.approx(want)
    # Score distributions: one chosen node per scored cycle, every plugin drawn with its shares.
    assert {d.plugin for d in run.scores} >= {"NodeResourcesFit", "TaintToleration"}
    for d in run.scores:
        assert sum(d.chosen) == d.cycles > 0 and sum(d.scored) >= d.cycles
    shares = chart_data(opened, "scores-A")
    assert len(shares) == 2 * len(run.scores)
    assert all(sum(t["y"]) == pytest.approx(1.0) for t in shares)
    tables = opened.evaluate(TABLES_JS)
    # A/B aggregates, then the pods that differ (every one, with its node under each).
    assert [r[0] for r in tables["ab-aggregate"]] == [d.metric for d in sim.comparison.aggregate]
    assert [r[:3] for r in tables["ab-pods"]] == [
        [p.pod, p.a or "pending", p.b or "pending"] for p in sim.comparison.pods
    ]
    # Pending pods grouped by kube-scheduler's message, the counts adding up to the pods pending.
    pending = [d for d in run.final if d.node is None]
    [bars] = chart_data(opened, "pending-A")
    assert sum(bars["x"]) == len(pending) > 0
    groups = {(int(r[0]), r[1]) for r in tables["pending-A"]}
    assert groups == {(sum(1 for p in pending if p.message == m), m) for m in {p.message for p in pending}}
    assert len(tables["steps-A"]) == 1 + len(run.steps)


def test_without_records_only_the_aggregates(browser: Browser, tmp_path: Path) -> None:
    sim, report = simulate(tmp_path, "--no-records")
    assert not sim.records and sim.runs[0].scores == []
    opened = browser.open(report)
    opened.assert_clean(report.resolve().as_uri())
    opened.assert_charts_drawn({"steps-A"})
    assert "records off" in opened.evaluate("() => document.body.innerText")


def hostile() -> Simulation:
    evil = "</script><b id=owned>x</b>"
    usage = {"cpu": Usage(500, 1000)}
    agg = Aggregate(nodes=1, nodes_used=1, pods_bound=1, pods_placed=1, pods_pending=1, preemptions=0)
    node = NodeState(evil, zone="<i id=zone>z</i>", pods=1, resources=usage)
    step = StepResult(index=0, name=evil, nodes=[node], aggregate=agg)
    final = [PodDecision("ns/" + evil, evil), PodDecision("ns/p", None, "<img src=x onerror=alert(1)>")]
    runs = [
        Run(label=label, config=evil, initial=[node], initial_aggregate=agg, steps=[step], final=final)
        for label in "AB"
    ]
    comparison = Comparison(pods=[PodDifference(evil, evil, None, "", evil)], same=1)
    return Simulation(
        kubernetes_version="v1.37.2", cluster=evil, scenario=evil, seed=0, runs=runs, comparison=comparison
    )


def test_names_are_data_never_markup(browser: Browser, tmp_path: Path) -> None:
    path = tmp_path / "hostile.html"
    write_report(hostile(), path)
    opened = browser.open(path)
    opened.assert_clean(path.resolve().as_uri())
    found = opened.evaluate(
        "() => [document.getElementById('owned'), document.getElementById('zone'), document.images.length]"
    )
    assert found == [None, None, 0]
    [heat] = chart_data(opened, "nodes-A-cpu")
    assert heat["y"] == ["</script><b id=owned>x</b>"] and heat["z"] == [[0.5, 0.5]]


def test_an_unwritable_report_is_a_clear_error(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "kubesched", "simulate", "--cluster", str(EXAMPLES / "cluster.yaml")]
    cmd += ["--scenario", str(EXAMPLES / "scenario.yaml"), "--report", str(tmp_path / "no" / "such" / "r.html")]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--report: cannot write" in done.stderr and "r.html" in done.stderr


def test_a_big_simulation_is_bounded() -> None:
    import re
    import time

    from kubesched.scheduler.report.simulation import MAX_HEAT_NODES, MAX_POD_ROWS, MAX_REASONS, simulation_html

    usage = {"cpu": Usage(500, 1000), "memory": Usage(1, 4), "nvidia.com/gpu": Usage(1, 8)}
    nodes = [NodeState(f"n-{i}", zone=f"z-{i % 3}", pods=1, resources=usage) for i in range(5000)]
    agg = Aggregate(nodes=5000, nodes_used=5000, pods_bound=1, pods_placed=1, pods_pending=1, preemptions=0)
    steps = [StepResult(index=i, name=f"s{i}", nodes=nodes, aggregate=agg) for i in range(5)]
    final = [PodDecision(f"ns/p-{i}", None, f"message {i}") for i in range(10_000)]
    run = Run(label="A", config="", initial=nodes, initial_aggregate=agg, steps=steps, final=final)
    diffs = [PodDifference(f"ns/p-{i}", "n-1", None) for i in range(10_000)]
    sim = Simulation(
        kubernetes_version="v1.37.2",
        cluster="c",
        scenario="s",
        seed=0,
        runs=[run, run],
        comparison=Comparison(pods=diffs),
    )
    began = time.perf_counter()
    page = simulation_html(sim)
    assert time.perf_counter() - began < 30
    assert len(page) < 12_000_000
    assert f"The first {MAX_POD_ROWS} of 10000 shown" in page
    assert f"The {MAX_REASONS} most frequent of 10000 messages shown" in page
    # The heat maps: 300 of the 5,000 nodes (every chart the same ones: equally used, by name).
    assert len(set(re.findall(r'"(n-\d+)(?: \(cordoned\))?"', page))) == MAX_HEAT_NODES
