"""simulate's score distributions are the real cycle's scores: for one pod, each plugin's chosen bucket is the
normalized score explain gives that plugin on the node the pod lands on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import yaml

from kubesched.scheduler.explain.offline import explain_file
from kubesched.scheduler.simulate.model import BUCKETS, Simulation

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def test_one_pods_scores_are_explains(tmp_path: Path) -> None:
    doc = yaml.safe_load((EXAMPLES / "cluster.yaml").read_text())
    doc["items"] = [
        o for o in doc["items"] if o["kind"] != "Pod" or o["spec"].get("nodeName") or o["metadata"]["name"] == "web-0"
    ]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(doc))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nsteps:\n- {name: replay, replayPending: true}\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesched",
            "simulate",
            "--cluster",
            str(cluster),
            "--scenario",
            str(scenario),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sim = msgspec.json.decode(done.stdout, type=Simulation)
    [run] = sim.runs
    ex = explain_file(cluster, "shop/web-0")
    assert ex.node is not None and run.final[0].node == ex.node
    chosen = next(n for n in ex.nodes if n.name == ex.node)
    scored = [n for n in ex.nodes if n.scores]
    assert {d.plugin for d in run.scores} == {s.plugin for s in chosen.scores}
    for d in run.scores:
        assert d.cycles == 1
        score = next(s for s in chosen.scores if s.plugin == d.plugin)
        assert d.weight == score.weight
        want = [0] * BUCKETS
        want[min(score.normalized // 10, BUCKETS - 1)] = 1
        assert d.chosen == want
        every = [0] * BUCKETS
        for n in scored:
            s = next(s for s in n.scores if s.plugin == d.plugin)
            every[min(s.normalized // 10, BUCKETS - 1)] += 1
        assert d.scored == every
