"""Scenario files: the format, and hostile ones refused with the field named, bounded in memory and time."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.core import LabelSelector, LabelSelectorRequirement
from kubesched.scheduler.simulate.scenario import (
    MAX_FILE_BYTES,
    ScenarioError,
    parse,
    read_scenario,
    selector_matches,
)

POD = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
NODE = {"status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "8"}}}


def problems(doc: Any) -> list[str]:
    with pytest.raises(ScenarioError) as err:
        parse(doc)
    return [str(e) for e in err.value.errors]


def doc(*steps: Any) -> dict[str, Any]:
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "steps": list(steps)}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def test_a_complete_scenario_is_read() -> None:
    s = parse(
        {
            **doc(
                {"replayPending": True},
                {"name": "gpus", "addNodes": {"count": 10, "namePrefix": "gpu", "used": 0.3, "template": NODE}},
                {
                    "addPods": [
                        {"replicas": 50, "name": "web", "template": POD},
                        {"replicas": 1, "name": "db", "template": POD},
                    ]
                },
                {"drain": "node-3", "deletePods": {"namespace": "ns", "selector": {"matchLabels": {"app": "x"}}}},
                {"removeNodes": {"names": ["gpu-0"]}},
            ),
            "metadata": {"name": "burst"},
        }
    )
    assert s.name == "burst" and len(s.steps) == 5
    assert s.steps[0].replay_pending and s.steps[1].name == "gpus" and s.steps[2].name == "step 2"
    assert s.steps[1].add_nodes[0].used == {"*": 0.3} and s.steps[1].add_nodes[0].count == 10
    assert [(p.name, p.namespace, p.replicas) for p in s.steps[2].add_pods] == [
        ("web", "default", 50),
        ("db", "default", 1),
    ]
    assert s.steps[3].drain is not None and s.steps[3].drain.names == ("node-3",)
    assert s.steps[3].delete_pods is not None and s.steps[3].delete_pods.namespace == "ns"


def test_millions_of_replicas_are_refused_naming_the_field() -> None:
    got = problems(
        doc(
            {"addNodes": {"count": 1, "namePrefix": "n", "template": NODE}},
            {"replayPending": True},
            {"addPods": {"replicas": 5_000_000, "name": "web", "template": POD}},
        )
    )
    assert got == ["steps[2].addPods.replicas: 5000000 exceeds the limit 100000"]


def test_many_generators_are_refused_in_total() -> None:
    step = {"addPods": [{"replicas": 100_000, "name": f"w{i}", "template": POD} for i in range(3)]}
    got = problems(doc(step))
    assert got == ["steps[0].addPods[2].replicas: the scenario adds 300000 pods, over the limit 200000"]
    nodes = [{"addNodes": {"count": 20_000, "namePrefix": f"n{i}", "template": NODE}} for i in range(3)]
    assert problems(doc(*nodes)) == ["steps[2].addNodes.count: the scenario adds 60000 nodes, over the limit 50000"]
    assert problems(doc(*[{"replayPending": True}] * 1001)) == ["steps: 1001 steps exceed the limit 1000"]


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("1e9999", "exceeds the limit 1000000000000000"),
        ("99999999999999999999Ei", "exceeds the limit"),
        ("-1", "must be greater than or equal to 0"),
        ("lots", "Invalid value: 'lots'"),
    ],
)
def test_absurd_quantities_are_refused(amount: str, message: str) -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": amount}}}]}}
    got = problems(doc({"addPods": {"replicas": 1, "name": "w", "template": pod}}))
    assert len(got) == 1 and got[0].startswith("steps[0].addPods.template.spec.containers[0].resources.requests.cpu: ")
    assert message in got[0]
    node = {"status": {"allocatable": {"memory": amount}}}
    got = problems(doc({"addNodes": {"count": 1, "namePrefix": "n", "template": node}}))
    assert got[0].startswith("steps[0].addNodes.template.status.allocatable.memory: ") and message in got[0]


def test_wrong_shapes_are_named() -> None:
    got = problems(
        doc(
            {"addPods": {"replicas": True, "name": "w", "template": POD}},
            {"addNodes": {"count": 0, "template": {"status": {"allocatable": {"cpu": "1"}}}}},
            {"addNodes": {"count": 1, "namePrefix": "n", "used": 1.5, "template": {"spec": {"taints": "x"}}}},
            {"drain": {"nodes": ["a"]}},
            {"name": "idle"},
            {"replayPending": "yes"},
        )
    )
    assert got == [
        "steps[0].addPods.replicas: must be an integer, got a boolean",
        "steps[1].addNodes.count: 0 must be at least 1",
        "steps[1].addNodes.namePrefix: is required (or template.metadata.name)",
        "steps[2].addNodes.used: must be a fraction between 0 and 1, got 1.5",
        "steps[2].addNodes.template.spec.taints: Expected array | null, got str",
        "steps[3].drain.nodes: unknown field (expected one of names, selector)",
        "steps[3].drain: selects nothing: give names or a selector",
        "steps[4]: does nothing: give at least one of drain, removeNodes, deletePods, addNodes, replayPending, addPods",
        "steps[5].replayPending: must be true or false, got the string 'yes'",
    ]
    assert problems({"kind": "Pod", "steps": []}) == [
        "kind: must be Scenario, got 'Pod'",
        "steps: must be a non-empty list of steps, got a list",
    ]


def test_a_100_mb_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.truncate(100 * 1024 * 1024)  # sparse: 100 MB on paper, nothing read
    tracemalloc.start()
    started = time.monotonic()
    with pytest.raises(ScenarioError, match=f"is 104857600 bytes; a scenario file is limited to {MAX_FILE_BYTES}"):
        read_scenario(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20 and time.monotonic() - started < 1


def test_alias_bombs_and_cycles_and_depth_are_refused(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    started = time.monotonic()
    with pytest.raises(ScenarioError, match="more than 200000 values once YAML aliases are expanded"):
        read_scenario(write(tmp_path, bomb + "steps: [*i]\n"))
    assert time.monotonic() - started < 5
    with pytest.raises(ScenarioError, match=r"recursive YAML alias|not valid YAML"):
        read_scenario(write(tmp_path, "steps: &s [*s]\n"))
    with pytest.raises(ScenarioError, match="nested more than 100 levels deep"):
        read_scenario(write(tmp_path, "steps: " + "[" * 5000 + "]" * 5000 + "\n"))
    with pytest.raises(ScenarioError, match='steps: duplicate field "steps"'):
        read_scenario(write(tmp_path, "steps: []\nsteps: []\n"))
    with pytest.raises(ScenarioError, match="not UTF-8"):
        (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00")
        read_scenario(tmp_path / "bin.yaml")


def test_selectors() -> None:
    sel = LabelSelector(
        match_labels={"a": "1"},
        match_expressions=[
            LabelSelectorRequirement("b", "In", ["x", "y"]),
            LabelSelectorRequirement("c", "DoesNotExist"),
        ],
    )
    assert selector_matches(sel, {"a": "1", "b": "y"})
    assert not selector_matches(sel, {"a": "1", "b": "z"})
    assert not selector_matches(sel, {"a": "1", "b": "x", "c": ""})
    assert selector_matches(LabelSelector(), {})
    got = problems(doc({"drain": {"selector": {"matchExpressions": [{"key": "a", "operator": "Maybe"}]}}}))
    assert got == [
        "steps[0].drain.selector.matchExpressions[0].operator: 'Maybe' is not one of In, NotIn, Exists, DoesNotExist"
    ]
