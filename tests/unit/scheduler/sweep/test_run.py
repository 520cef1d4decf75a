"""Running a sweep: every cell once, the same table from one process or a pool, configurations checked
before any cell runs, and the ranking's rules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kubesched.scheduler.sweep.cell import CellResult
from kubesched.scheduler.sweep.execute import _keep, missing, ordered, prepare, run_local, run_serial
from kubesched.scheduler.sweep.rank import rank, report, text
from kubesched.scheduler.sweep.spec import SweepError, parse

ROOT = Path(__file__).resolve().parents[4]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
SCENARIO = str(ROOT / "examples" / "scenario.yaml")


def sweep_doc(**axes: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Sweep",
        "metadata": {"name": "t"},
        "cluster": CLUSTER,
        "scenarios": [SCENARIO],
        "axes": axes
        or {
            "weights": {"NodeResourcesFit": [1, 20]},
            "pluginArgs": {
                "NodeResourcesFit": [{"scoringStrategy": {"type": t}} for t in ("LeastAllocated", "MostAllocated")]
            },
        },
        "objective": {"maximize": {"podsPlaced": 1, "nodesUsed": -0.5}},
    }


def table_of(result: Any) -> list[tuple[Any, ...]]:
    return [(r.rank, r.id, r.objective, r.metrics) for r in result.configurations]


def test_a_pool_and_one_process_give_the_same_table_and_each_cell_once(tmp_path: Path) -> None:
    sweep = parse(sweep_doc(), tmp_path / "s.yaml")
    prepared = prepare(sweep)
    assert [c.id for c in prepared.cells] == ["s0/c0", "s0/c1", "s0/c2", "s0/c3"]
    serial = run_serial(prepared)
    pooled = asyncio.run(run_local(prepared, workers=2))
    assert sorted(serial) == sorted(pooled) == [c.id for c in prepared.cells] and not missing(prepared, pooled)
    assert len({r.worker for r in pooled.values()} - {r.worker for r in serial.values()}) >= 1  # other processes
    a = rank(sweep, ordered(prepared, serial), engine="1", kubernetes_version="v")
    b = rank(sweep, ordered(prepared, pooled), engine="2", kubernetes_version="v")
    assert table_of(a) == table_of(b)
    # MostAllocated with a heavy NodeResourcesFit packs the pods on fewer nodes: ranked first.
    best = a.configurations[0]
    assert best.rank == 1 and best.settings["NodeResourcesFit.args"] == "{scoringStrategy: {type: MostAllocated}}"
    assert best.settings["NodeResourcesFit"] == "20"
    assert best.metrics["nodesUsed"] < a.configurations[-1].metrics["nodesUsed"]
    assert best.objective == best.metrics["podsPlaced"] - 0.5 * best.metrics["nodesUsed"]
    out = text(a, sweep.objective.metrics)
    assert out.splitlines()[1].split()[:4] == ["rank", "config", "settings", "objective"]
    html = report(a, sweep.objective.metrics)
    assert html.count("<tr>") == 1 + 4 + 1 + 4 and "http" not in html.replace("http-equiv", "")


def test_a_result_computed_twice_is_kept_once() -> None:
    first = CellResult(id="s0/c0", config="c0", scenario=0, metrics={"podsPlaced": 3}, worker="a:1")
    again = CellResult(id="s0/c0", config="c0", scenario=0, metrics={"podsPlaced": 3}, worker="b:2")
    seen: list[str] = []
    results: dict[str, CellResult] = {}
    for r in (first, again):
        _keep(results, r, lambda r: seen.append(r.worker))
    assert results == {"s0/c0": first} and seen == ["a:1"]


def test_configurations_kube_scheduler_refuses_are_named_before_any_cell_runs(tmp_path: Path) -> None:
    sweep = parse(
        sweep_doc(pluginSets={"ok": None, "bad": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}),
        tmp_path / "s.yaml",
    )
    with pytest.raises(SweepError) as err:
        prepare(sweep)
    (problem,) = err.value.errors
    assert problem.path == "configuration c1 (pluginSet=bad)"
    assert (
        problem.message.startswith("config.profiles[0].plugins.score.enabled[0]") and "NoSuchPlugin" in problem.message
    )


def test_a_failed_cell_is_ranked_last_and_equal_objectives_share_a_rank(tmp_path: Path) -> None:
    sweep = parse(sweep_doc(weights={"NodeResourcesFit": [1, 2, 3]}), tmp_path / "s.yaml")
    cells = [
        CellResult(id="s0/c0", config="c0", scenario=0, error="boom"),
        CellResult(id="s0/c1", config="c1", scenario=0, metrics={"podsPlaced": 4, "nodesUsed": 2}),
        CellResult(id="s0/c2", config="c2", scenario=0, metrics={"podsPlaced": 4, "nodesUsed": 2}),
    ]
    result = rank(sweep, cells, engine="x", kubernetes_version="v")
    assert [(r.id, r.rank, r.objective) for r in result.configurations] == [
        ("c1", 1, 3.0),
        ("c2", 1, 3.0),
        ("c0", 0, None),
    ]
    assert result.configurations[-1].errors == ["scenario 0: boom"]
    assert "c0: scenario 0: boom" in text(result, [])
