"""The scheduler in a real cluster when things go wrong: plugins that raise (item 6), a live scheduler
without a configuration beside kube-scheduler (item 12). Real kube-apiserver and kube-scheduler."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import wait_until
from tests.integration.test_scheduler_e2e import (
    RUN_LABEL,
    Run,
    create,
    events,
    node_of,
    nodes,
    pod,
    running,
)

pytestmark = pytest.mark.controlplane

BOOM = """
from typing import ClassVar
from kubesched.framework.interfaces import FilterPlugin
from kubesched.framework.status import Verdicts


class Boom(FilterPlugin):
    name: ClassVar[str] = "Boom"

    def filter(self, state, pod, nodes):
        if pod.labels.get("bad") == "yes":
            return {}["zone"]  # a KeyError, as a plugin's bug
        return Verdicts.all_pass(len(nodes))
"""


def test_a_plugin_raising_for_one_pod_fails_only_that_pod_and_the_scheduler_keeps_running(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    (tmp_path / "boom.py").write_text(BOOM)
    profile = {"schedulerName": run.scheduler, "plugins": {"multiPoint": {"enabled": [{"name": "Boom"}]}}}
    config = run.config(profiles=[profile], extra={"pluginModules": ["boom.py:Boom"]})
    specs = {"a": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    with nodes(cp, run, specs), running(cp, tmp_path, config) as sched:
        bad = pod("bad", run.scheduler)
        bad["metadata"]["labels"] = {"bad": "yes"}
        create(cp, ns, pod("good-0", run.scheduler), bad, pod("good-1", run.scheduler))
        wait_until(lambda: node_of(cp, ns, "good-0") and node_of(cp, ns, "good-1"), "the good pods bound")

        def failed() -> list[dict[str, Any]]:
            return [e for e in events(cp, ns, "bad") if e["reason"] == "FailedScheduling"]

        note = wait_until(failed, "a FailedScheduling event for the bad pod")[0]["note"]
        assert note == "running \"Boom\" filter plugin: KeyError: 'zone'"
        # Retried with backoff (attempts grow), and the process is still alive.
        wait_until(
            lambda: (
                sched.metric(
                    "kubesched_scheduler_plugin_errors_total",
                    profile=run.scheduler,
                    plugin="Boom",
                    extension_point="Filter",
                )
                >= 2
            ),
            "a retry of the bad pod",
        )
        assert sched.proc is not None and sched.proc.poll() is None
        assert node_of(cp, ns, "bad") is None
        log = sched.log.read_text(errors="replace")  # the traceback, with the plugin's file and line, and the pod
        assert "Traceback" in log and 'boom.py", line' in log and f"{ns}/bad" in log


def test_without_a_config_the_live_scheduler_serves_kubesched_beside_kube_scheduler(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    port = free_port()
    # Stopped at the end: left running, it would schedule later tests' default-scheduler pods.
    kube = cp.start_scheduler(name=f"kube-scheduler-{run.id}")
    log = tmp_path / "kubesched.log"
    cmd = [sys.executable, "-m", "kubesched", "scheduler", "run", "--kubeconfig", str(cp.admin_kubeconfig)]
    cmd += ["--listen", f"127.0.0.1:{port}", "--log-format", "text"]
    confine = {"nodeSelector": {RUN_LABEL: run.id}}
    with nodes(cp, run, {"a": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}):
        with log.open("ab") as out:  # the child keeps its own copy of the descriptor
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            plain = [pod(f"plain-{i}", "default-scheduler", **confine) for i in range(3)]
            ours = [pod(f"ours-{i}", "kubesched", **confine) for i in range(3)]
            create(cp, ns, *plain, *ours)
            for p in plain + ours:
                name = p["metadata"]["name"]
                wait_until(lambda name=name: node_of(cp, ns, name), f"{name} bound", within=60)

            def scheduled(name: str) -> list[dict[str, Any]]:
                return [e for e in events(cp, ns, name) if e["reason"] == "Scheduled"]

            for p in plain:
                name = p["metadata"]["name"]
                got = wait_until(lambda name=name: scheduled(name), f"the Scheduled event of {name}")
                assert [e["reportingController"] for e in got] == ["default-scheduler"]
            instances = set()
            for p in ours:
                name = p["metadata"]["name"]
                got = wait_until(lambda name=name: scheduled(name), f"the Scheduled event of {name}")
                assert [e["reportingController"] for e in got] == ["kubesched"]
                instances.add(got[0]["reportingInstance"])
            # One instance, told apart from kube-scheduler's <controller>-<hostname> by the process identity.
            assert len(instances) == 1 and next(iter(instances)).startswith("kubesched-")
            assert "_" in next(iter(instances))
            for p in plain + ours:
                assert not [e for e in events(cp, ns, p["metadata"]["name"]) if e["reason"] == "FailedScheduling"]
            assert proc.poll() is None, log.read_text()[-3000:]
        finally:
            proc.terminate()
            proc.wait(20)
            kube.stop()


COUNTED = """
from pathlib import Path
from typing import ClassVar
from kubesched.framework.interfaces import FilterPlugin
from kubesched.framework.status import Verdicts

LOG = Path(__file__).with_suffix(".log")
with LOG.open("a") as log:
    log.write("imported\\n")


class Counted(FilterPlugin):
    name: ClassVar[str] = "Counted"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        with LOG.open("a") as log:
            log.write("built\\n")

    def filter(self, state, pod, nodes):
        return Verdicts.all_pass(len(nodes))
"""


def test_the_live_scheduler_imports_and_builds_a_user_plugin_once_at_start_up(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    # Before: the command built the configuration to check it, again to read the kubeconfig, again to
    # read the client settings, and the scheduler a fourth time (4 plugin instances per profile).
    cp, run, ns = control_plane, Run(), kube_namespace
    plugin = tmp_path / "counted.py"
    plugin.write_text(COUNTED)
    log = tmp_path / "counted.log"
    profile = {"schedulerName": run.scheduler, "plugins": {"multiPoint": {"enabled": [{"name": "Counted"}]}}}
    config = run.config(profiles=[profile], extra={"pluginModules": ["counted.py:Counted"]})
    specs = {"a": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    with nodes(cp, run, specs), running(cp, tmp_path, config) as sched:
        assert log.read_text().splitlines() == ["imported", "built"]
        create(cp, ns, pod("p", run.scheduler))
        wait_until(lambda: node_of(cp, ns, "p"), "the pod bound through the user's plugin")
        assert log.read_text().splitlines() == ["imported", "built"]
        # A changed plugin file is a reload: imported and built again, once.
        plugin.write_text(COUNTED + "\n# changed\n")
        wait_until(lambda: sched.metric("kubesched_scheduler_config_reloads_total", result="applied") >= 1, "reload")
        assert log.read_text().splitlines() == ["imported", "built", "imported", "built"]
