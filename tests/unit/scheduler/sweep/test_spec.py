"""Sweep files: the grid a good one makes, and hostile or wrong ones refused with the field's path."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.scheduler.sweep.spec import MAX_CELLS, SweepError, parse, read_sweep

ROOT = Path(__file__).resolve().parents[4]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
SCENARIO = str(ROOT / "examples" / "scenario.yaml")


def doc(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Sweep",
        "cluster": CLUSTER,
        "scenarios": [SCENARIO],
        "axes": {"weights": {"NodeResourcesFit": [1, 5]}, "percentageOfNodesToScore": [0, 50, 100]},
        "objective": {"maximize": "podsPlaced"},
    }
    base.update(over)
    return base


def problems(d: object, tmp_path: Path) -> list[str]:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(SweepError) as err:
        read_sweep(path)
    return [str(e) for e in err.value.errors] or [str(err.value)]


def test_the_grid_is_the_product_of_the_axes_applied_to_every_profile(tmp_path: Path) -> None:
    template = {
        "profiles": [
            {"schedulerName": "a"},
            {"schedulerName": "b", "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 9}]}}},
        ]
    }
    sweep = parse(doc(config=template), tmp_path / "s.yaml")
    assert [c.id for c in sweep.configurations] == [f"c{i}" for i in range(6)]
    last = sweep.configurations[-1]
    assert last.label == "NodeResourcesFit=5 percentageOfNodesToScore=100"
    assert last.document["percentageOfNodesToScore"] == 100
    assert last.document["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    a, b = last.document["profiles"]
    assert a["plugins"]["score"]["enabled"] == [{"name": "NodeResourcesFit", "weight": 5}]
    assert b["plugins"]["score"]["enabled"] == [{"name": "NodeResourcesFit", "weight": 5}]  # replaced, not added
    assert template["profiles"][1]["plugins"]["score"]["enabled"][0]["weight"] == 9  # the template untouched


def test_plugin_sets_and_args_are_axes(tmp_path: Path) -> None:
    axes = {
        "pluginSets": {
            "default": None,
            "no-balanced": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
        },
        "pluginArgs": {"NodeResourcesFit": [{"scoringStrategy": {"type": "MostAllocated"}}]},
    }
    sweep = parse(doc(axes=axes), tmp_path / "s.yaml")
    assert [c.settings for c in sweep.configurations] == [
        (("NodeResourcesFit.args", "{scoringStrategy: {type: MostAllocated}}"), ("pluginSet", "default")),
        (("NodeResourcesFit.args", "{scoringStrategy: {type: MostAllocated}}"), ("pluginSet", "no-balanced")),
    ]
    (profile,) = sweep.configurations[1].document["profiles"]
    assert profile["plugins"]["score"] == {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}
    assert profile["pluginConfig"] == [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
    ]


def test_objectives(tmp_path: Path) -> None:
    m = {"podsPlaced": 10, "nodesUsed": 4, "cpu.spread": 0.5}
    assert parse(doc(objective={"minimize": "cpu.spread"}), tmp_path / "s").objective.value(m) == -0.5
    weighted = parse(doc(objective={"maximize": {"podsPlaced": 1, "nodesUsed": -0.5}}), tmp_path / "s").objective
    assert weighted.value(m) == 8 and weighted.metrics == ["podsPlaced", "nodesUsed"]
    gpu = parse(doc(objective={"minimize": "nvidia.com/gpu.stranded"}), tmp_path / "s").objective
    assert gpu.value({"nvidia.com/gpu.stranded": 3}) == -3 and gpu.value({}) == 0  # no GPU node: none stranded


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"kind": "Scenario"}, "kind: must be Sweep"),
        ({"cluster": "nope.yaml"}, "cluster: no such file"),
        ({"cluster": 3}, "cluster: must be a file name"),
        ({"scenarios": []}, "scenarios: must be a non-empty list"),
        ({"scenarios": [SCENARIO, "missing.yaml"]}, "scenarios[1]: no such file"),
        ({"scenarios": [SCENARIO] * 101}, "scenarios: 101 scenarios; a sweep is limited to 100"),
        ({"seed": -1}, "seed: must be an integer"),
        ({"extra": 1}, "extra: unknown field"),
        ({"config": [1]}, "config: must be a KubeSchedulerConfiguration mapping"),
        ({"config": {"profiles": "x"}}, "config.profiles: must be a non-empty list"),
        (
            {"axes": {"weights": {"NodeResourcesFit": [0]}}},
            "axes.weights.NodeResourcesFit[0]: must be an integer weight",
        ),
        ({"axes": {"weights": {"NodeResourcesFit": [True]}}}, "axes.weights.NodeResourcesFit[0]: must be an integer"),
        ({"axes": {"weights": {"NodeResourcesFit": 5}}}, "axes.weights.NodeResourcesFit: must be a non-empty list"),
        (
            {"axes": {"weights": {"NodeResourcesFit": list(range(1, 102))}}},
            "axes.weights.NodeResourcesFit: 101 values; an axis is limited to 100",
        ),
        (
            {"axes": {"percentageOfNodesToScore": [50, 101]}},
            "axes.percentageOfNodesToScore[1]: must be an integer from 0 to 100",
        ),
        (
            {"axes": {"pluginArgs": {"NodeResourcesFit": ["MostAllocated"]}}},
            "axes.pluginArgs.NodeResourcesFit[0]: must be the plugin's args",
        ),
        ({"axes": {"pluginSets": {"x": [1]}}}, "axes.pluginSets.x: must be a profile's plugins mapping"),
        ({"axes": {"colour": [1]}}, "axes.colour: unknown axis"),
        ({"objective": {"maximize": "happiness"}}, "objective.maximize: unknown metric 'happiness'"),
        (
            {"objective": {"maximize": {"podsPlaced": "a lot"}}},
            "objective.maximize.podsPlaced: must be a finite number",
        ),
        ({"objective": {"maximize": "podsPlaced", "minimize": "nodesUsed"}}, "objective: must be {maximize: METRIC}"),
        ({"objective": None}, "objective: must be"),
    ],
)
def test_wrong_fields_are_named(tmp_path: Path, change: dict[str, Any], expected: str) -> None:
    found = problems(doc(**change), tmp_path)
    assert any(p.startswith(expected) for p in found), found


def test_a_grid_too_large_is_refused_before_it_is_made(tmp_path: Path) -> None:
    axes = {"weights": {f"P{i}": list(range(1, 11)) for i in range(8)}}  # 10^8 configurations
    (found,) = problems(doc(axes=axes), tmp_path)
    assert found.startswith("axes: 10 P0 × 10 P1") and f"100000000 cells; a sweep is limited to {MAX_CELLS}" in found
    assert MAX_CELLS < 10**8


def test_hostile_documents(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("a: &a [*a]\n")
    with pytest.raises(SweepError) as err:
        read_sweep(path)
    assert "recursive" in str(err.value) or "alias" in str(err.value)
    names = "abcdefghij"
    lol = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in itertools.pairwise(names)
    )
    path.write_text(lol)
    with pytest.raises(SweepError) as err:
        read_sweep(path)
    assert err.value.errors and err.value.errors[0].path == "<document>"
    path.write_bytes(b"x" * (5 * 1024 * 1024))
    with pytest.raises(SweepError, match="larger than"):
        read_sweep(path)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(SweepError, match="not UTF-8"):
        read_sweep(path)
    path.write_text("[1, 2]")
    with pytest.raises(SweepError, match="must be a mapping"):
        read_sweep(path)
    with pytest.raises(SweepError, match="cannot read"):
        read_sweep(tmp_path / "absent.yaml")


def test_plugin_args_may_be_named(tmp_path: Path) -> None:
    named = {"pack": {"scoringStrategy": {"type": "MostAllocated"}}, "spread": {}}
    sweep = parse(doc(axes={"pluginArgs": {"NodeResourcesFit": named}}), tmp_path / "s.yaml")
    assert [c.label for c in sweep.configurations] == ["NodeResourcesFit.args=pack", "NodeResourcesFit.args=spread"]
    found = problems(doc(axes={"pluginArgs": {"NodeResourcesFit": {"pack": "MostAllocated"}}}), tmp_path)
    assert found == ["axes.pluginArgs.NodeResourcesFit.pack: must be the plugin's args (a mapping), not a string"]
    found = problems(doc(axes={"pluginArgs": {"NodeResourcesFit": {}}}), tmp_path)
    assert found == [
        "axes.pluginArgs.NodeResourcesFit: must be a non-empty list of args, or a mapping of a name to args"
    ]
