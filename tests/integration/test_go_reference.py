"""The Go reference extender of benchmarks/extender_vs_go and ours give the same answers.

Builds goext/ (cached by source hash; seconds after the first build) and runs both servers on a
small generated cluster: the benchmark's two requests plus the edge cases of payloads.check_cases.
Without Go it skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.process import free_port

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "extender_vs_go"
sys.path.insert(0, str(BENCH))

import payloads  # noqa: E402
import reference  # noqa: E402

pytestmark = pytest.mark.goreference


@pytest.fixture(scope="module")
def goext() -> Path:
    if shutil.which("go") is None:
        message = "the go toolchain is not on PATH: cannot build the Go reference extender"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{message} (CI=true: refusing to skip)")
        pytest.skip(message)
    return reference.build_go()


@pytest.fixture(scope="module")
def servers(goext: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, dict[str, Any]]]:
    work = tmp_path_factory.mktemp("goref")
    payloads.write(work, [60])
    nodes_file = work / "nodes-60.json"
    nodes = json.loads(nodes_file.read_text())
    go_port, py_port = free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # ours from this checkout
    go = reference.Server(
        "go", reference.go_command(goext, nodes_file, f"127.0.0.1:{go_port}"), go_port, work / "go.log"
    )
    py = reference.Server(
        "kubesched", reference.python_command(nodes_file, f"127.0.0.1:{py_port}"), py_port, work / "py.log", env
    )
    try:
        probe = (work / "filter-names-60.json").read_bytes()
        go.wait_ready(probe)
        py.wait_ready(probe)
        yield go_port, py_port, nodes
    finally:
        go.stop()
        py.stop()


def test_same_answers_on_benchmark_payloads_and_edge_cases(servers: tuple[int, int, dict[str, Any]]) -> None:
    go_port, py_port, nodes = servers
    cases = {
        "names": json.dumps({"Pod": payloads.make_pod(), "NodeNames": [n["metadata"]["name"] for n in nodes["items"]]}),
        "full": json.dumps({"Pod": payloads.make_pod(), "Nodes": nodes, "NodeNames": None}),
    }
    bodies = {label: body.encode() for label, body in cases.items()} | payloads.check_cases(nodes)
    assert reference.differences(go_port, py_port, bodies) == []


def test_edge_cases_reach_every_rule(servers: tuple[int, int, dict[str, Any]]) -> None:
    """The comparison means something only if the answers use every outcome of the policy."""
    go_port, _, nodes = servers
    seen: dict[str, set[str]] = {"passed": set(), "failed": set(), "unresolvable": set()}
    scores: set[int] = set()
    for body in payloads.check_cases(nodes).values():
        status, reply = reference.post(go_port, "filter", body)
        assert status == 200
        got = reference.normalize("filter", reply)
        seen["passed"].update(got["passed"])
        for key in ("failed", "unresolvable"):
            seen[key].update(got[key].values())
        status, reply = reference.post(go_port, "prioritize", body)
        scores.update(score for _, score in reference.normalize("prioritize", reply))
    assert seen["passed"]
    assert seen["unresolvable"] == {"node(s) didn't have label custom", "node(s) were unschedulable"}
    assert {m.split(";")[0] for m in seen["failed"]} == {
        "Insufficient example.com/custom-resource",
        "node is not in the extender's node cache (yet)",
    }
    assert {0, 10} <= scores and len(scores) > 2


def test_go_reference_rejects_bad_input(servers: tuple[int, int, dict[str, Any]]) -> None:
    go_port, _, _ = servers
    for body in (b"{", b"{}", b'{"Pod": {}, "Nodes": {"items": [7]}}'):
        status, text = reference.post(go_port, "filter", body)
        assert status == 400, (body, status, text)
