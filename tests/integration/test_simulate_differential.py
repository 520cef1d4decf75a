"""`simulate`'s records against the real kube-scheduler: random clusters, pod by pod (the differential runner).

Each pending pod of the differential scenarios is decided by `simulate` (a `replayPending` step on the
snapshot kube-scheduler decides it on) and by kube-scheduler: the outcome, the FailedScheduling message, the
nomination and the victims simulate records must be kube-scheduler's. The feasible and best-scored sets are
not simulate's to record; they come from `memory.decide` on the same snapshot (checked by test_differential).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kubesched.cluster.files import ClusterFile
from kubesched.config.profiles import parse as parse_config
from kubesched.scheduler.memory import Decision, decode_snapshot, snapshot_decider
from kubesched.scheduler.profiles.manager import Loaded, load
from kubesched.scheduler.simulate.play import Options, play
from kubesched.scheduler.simulate.scenario import parse
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.differential.generate import Knobs
from kubesched.testing.differential.runner import run
from kubesched.versions import Release

SEEDS = (25, 101)
PODS = 15
REPLAY = parse({"steps": [{"replayPending": True}]})
CONFIG = {"percentageOfNodesToScore": 100}


def simulate_decider(release: Release) -> Any:
    honest = snapshot_decider(CONFIG, release)
    loaded: dict[str, Loaded] = {}

    def decide(name: str, snapshot: Mapping[str, Sequence[Mapping[str, Any]]]) -> Decision:
        if name not in loaded:
            document = {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                **CONFIG,
                "profiles": [{"schedulerName": name}],
            }
            loaded[name] = load(parse_config(document), release=release)
        got = decode_snapshot(snapshot)
        (pending,) = [p for p in got.pods if not p.spec.node_name]
        key = f"{pending.metadata.namespace}/{pending.metadata.name}"
        found = ClusterFile(got.nodes, got.pods, got.workloads, got.namespaces, got.pdbs)
        sim, final = asyncio.run(play(REPLAY, found, loaded[name].build, Options(seed=0)))
        (mine,) = [d for d in final if d.pod == key]
        (step,) = sim.steps
        assert [d.pod for d in step.decisions][:1] == [key]  # the step recorded its attempt
        sets = honest(name, snapshot)
        preempted = [p for p in step.preemptions if p.preemptor == key]
        if preempted:  # nominated, victims evicted; the pod then bound in the same step, as kube-scheduler's
            return Decision(
                None,
                preempted[0].node,
                preempted[0].message,
                sets.feasible,
                sets.best,
                tuple(sorted(p.victim for p in preempted)),
            )
        return Decision(mine.node, mine.nominated, mine.message, sets.feasible, sets.best, ())

    return decide


@pytest.mark.controlplane
@pytest.mark.all_kubernetes_versions
def test_simulate_records_what_kube_scheduler_decides(control_plane: ControlPlane, kubernetes_version: Release) -> None:
    report = run(control_plane, SEEDS, simulate_decider(kubernetes_version), knobs=Knobs(pending=PODS))
    print("\n" + report.table())
    unexplained = report.unexplained()
    assert not unexplained, "\n\n".join(case.describe() for case in unexplained)
    figures = report.figures()
    assert figures["pods"][0] == len(SEEDS) * PODS
    assert figures["message"][1] > 0  # refused pods compared by their message
