"""NodeDeclaredFeatures against the real kube-apiserver and kube-scheduler of the reference release (v1.37.2).

A pod with a RestartAllContainers restart rule needs nodes declaring RestartAllContainersOnContainerExits in
status.declaredFeatures. While none does, kube-scheduler and kubesched give the same FailedScheduling message;
once a node declares it (a status update, as a kubelet would), both bind the pod there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.builders import pod_manifest
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.nodes import node_manifest, node_status
from kubesched.testing.waiting import wait_until
from tests.integration.test_scheduler_e2e import RUN_LABEL, Run, create, events, node_of, running

pytestmark = pytest.mark.controlplane
FEATURE = "RestartAllContainersOnContainerExits"


def restarts_all(name: str, scheduler: str) -> dict[str, Any]:
    body = pod_manifest(name, scheduler=scheduler, requests={"cpu": "100m"})
    body["spec"]["containers"][0].update(
        restartPolicy="Never",
        restartPolicyRules=[{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}],
    )
    return body


def failed_note(cp: ControlPlane, ns: str, name: str) -> str:
    def note() -> str | None:
        return next((e["note"] for e in events(cp, ns, name) if e["reason"] == "FailedScheduling"), None)

    got: str = wait_until(note, f"a FailedScheduling event for {name}", within=60)
    return got


def test_same_message_and_placement_as_kube_scheduler(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, ns = control_plane, kube_namespace
    notes: dict[str, str] = {}
    placed: dict[str, str] = {}
    for who in ("kube-scheduler", "kubesched"):
        run = Run()
        names = [run.node("a"), run.node("b")]
        try:
            for name, declared in zip(names, (["SomethingElse"], None), strict=True):
                status = node_status(name)
                if declared is not None:
                    status["status"]["declaredFeatures"] = declared
                cp.create_node_object(node_manifest(name, labels={RUN_LABEL: run.id}), status)
            pod = f"{who}-pod"
            if who == "kube-scheduler":
                proc = cp.start_scheduler(run.config(profiles=[{"schedulerName": run.scheduler}]), name=run.id)
                try:
                    create(cp, ns, restarts_all(pod, run.scheduler))
                    notes[who] = failed_note(cp, ns, pod)
                    cp.api("PATCH", f"/api/v1/nodes/{names[1]}/status", {"status": {"declaredFeatures": [FEATURE]}})
                    placed[who] = cp.wait_pod_bound(ns, pod)
                finally:
                    proc.stop()
            else:
                with running(cp, tmp_path, run.config()) as ours:
                    create(cp, ns, restarts_all(pod, run.scheduler))
                    notes[who] = failed_note(cp, ns, pod)
                    cp.api("PATCH", f"/api/v1/nodes/{names[1]}/status", {"status": {"declaredFeatures": [FEATURE]}})
                    bound = wait_until(lambda p=pod: node_of(cp, ns, p), "bound after the node declares", within=60)  # type: ignore[misc]
                    placed[who] = bound or ours.tail()
            placed[who] = placed[who].removeprefix(f"ks-{run.id}-")
        finally:
            for name in names:
                cp.delete_node(name)
    assert "2 node(s) didn't match Pod's required features" in notes["kube-scheduler"]
    assert notes["kubesched"] == notes["kube-scheduler"]
    assert placed == {"kube-scheduler": "b", "kubesched": "b"}
