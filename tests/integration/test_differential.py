"""The differential test: random clusters and pods through the real kube-scheduler and kubesched, pod by pod.

Each seed's scenario (kubesched.testing.differential.generate) is created on the control plane; every pending
pod is decided by kubesched on a snapshot of the cluster and then by kube-scheduler (its feasible set recorded
by a pass-through extender). Any disagreement that no Known difference explains fails the test, printing the
seed, the pod and both answers (rerun it with `benchmarks/differential.py --seeds N`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from kubesched.scheduler.explain.decider import explain_decider
from kubesched.scheduler.memory import Decision, snapshot_decider
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.differential.generate import Knobs
from kubesched.testing.differential.runner import Objects, run
from kubesched.versions import Release

SEEDS = (25, 101, 202, 303)  # 25: a preemption whose victims include a pod already terminating
PODS = 30


@pytest.mark.controlplane
@pytest.mark.all_kubernetes_versions
@pytest.mark.parametrize("node_cache_capable", [True, False], ids=["node-names", "full-nodes"])
def test_kubesched_agrees_with_kube_scheduler(
    control_plane: ControlPlane, kubernetes_version: Release, node_cache_capable: bool
) -> None:
    seeds = SEEDS if node_cache_capable else SEEDS[:1]
    report = run(
        control_plane,
        seeds,
        # kubesched's answer is read from `kubesched explain`'s record of the pod (feasible set, best-scored
        # nodes, FitError message, nomination, victims): explain is checked against kube-scheduler here.
        explain_decider({"percentageOfNodesToScore": 100}, kubernetes_version),
        knobs=Knobs(pending=PODS),
        node_cache_capable=node_cache_capable,
    )
    print("\n" + report.table())
    unexplained = report.unexplained()
    assert not unexplained, "\n\n".join(case.describe() for case in unexplained)
    figures = report.figures()
    # The comparison compared something: pods both bound, both refused, and kube-scheduler's filters reached.
    assert figures["pods"][0] == len(seeds) * PODS
    assert figures["node among best"][1] > 0 and figures["message"][1] > 0
    assert any(case.kube.feasible for case in report.cases)


@pytest.mark.controlplane
def test_a_decider_that_drops_a_feasible_node_is_caught(control_plane: ControlPlane) -> None:
    """The comparison can fail: a kubesched that loses the last feasible node of each pod disagrees."""
    honest = snapshot_decider({"percentageOfNodesToScore": 100})

    def lossy(name: str, snapshot: Mapping[str, Objects]) -> Decision:
        got = honest(name, snapshot)
        return dataclasses.replace(got, feasible=got.feasible[:-1])

    report = run(control_plane, [7], lossy, knobs=Knobs(pending=8))
    assert report.unexplained() and all("feasible" in c.differences for c in report.unexplained())
    assert "feasible" in report.unexplained()[0].describe()
