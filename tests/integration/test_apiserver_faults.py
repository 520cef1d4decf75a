"""The API client under network faults against the real kube-apiserver, through `testing.FaultProxy`.

`kubesched scheduler run` (a child process) talks to the API server through the proxy; the test breaks
the link (silence, resets, delay, answers cut, the API server restarted) and measures how long after
the link is healthy again the pods created meanwhile are bound. Measured times are printed (run with
-s to read them; docs/reliability.md quotes them).
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster.kubeclient import AnswerLost, KubeClient, from_kubeconfig
from kubesched.scheduler.remote.events import EventRecorder
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
from kubesched.testing.waiting import until, wait_until
from tests.integration.test_scheduler_e2e import Run, create, events, node_of, nodes, pod, running

pytestmark = pytest.mark.controlplane
RECOVERY_BOUND = 30.0  # item 7: recover within 30 s of the link healing


def proxied_kubeconfig(cp: ControlPlane, proxy: FaultProxy, tmp_path: Path) -> Path:
    """The admin kubeconfig with the proxy as server (the serving certificate covers 127.0.0.1)."""
    doc = yaml.safe_load(cp.admin_kubeconfig.read_text())
    for cluster in doc["clusters"]:
        cluster["cluster"]["server"] = f"https://{proxy.address}"
    path = tmp_path / f"proxied-{proxy.port}.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def report(what: str, seconds: float) -> None:
    print(f"\nRELIABILITY {what}: {seconds:.1f} s")


def all_bound(cp: ControlPlane, ns: str, names: list[str]) -> bool:
    return all(node_of(cp, ns, n) for n in names)


def test_scheduling_recovers_within_30s_after_the_link_went_silent(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, {"a": {}}):
        kubeconfig = proxied_kubeconfig(cp, proxy, tmp_path)
        with running(cp, tmp_path, run.config(), kubeconfig=kubeconfig) as sched:
            create(cp, ns, pod("before", run.scheduler))
            wait_until(lambda: node_of(cp, ns, "before"), "a pod bound through the proxy")
            proxy.blackhole()  # every connection silent, no reset: a proxy that stopped answering
            names = [f"p{i}" for i in range(5)]
            create(cp, ns, *(pod(n, run.scheduler) for n in names))
            outage_end = time.monotonic() + 20  # the outage lasts 20 s
            while time.monotonic() < outage_end:
                assert not any(node_of(cp, ns, n) for n in names), "bound through a silent link?"
                time.sleep(1)  # the outage's length is the behaviour under test: checked every second
            proxy.heal()
            healed = time.monotonic()
            wait_until(lambda: all_bound(cp, ns, names), "the pods bound after the link healed", within=RECOVERY_BOUND)
            report("blackhole 20 s -> pods created during it bound", time.monotonic() - healed)
            assert sched.proc is not None and sched.proc.poll() is None


def test_scheduling_recovers_after_resets_and_refused_connections(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, {"a": {}}):  # noqa: SIM117 - proxy first
        with running(cp, tmp_path, run.config(), kubeconfig=proxied_kubeconfig(cp, proxy, tmp_path)):
            create(cp, ns, pod("before", run.scheduler))
            wait_until(lambda: node_of(cp, ns, "before"), "a pod bound through the proxy")
            proxy.reset()  # every connection reset once; new ones pass
            start = time.monotonic()
            create(cp, ns, pod("after-reset", run.scheduler))
            wait_until(lambda: node_of(cp, ns, "after-reset"), "bound after a reset", within=RECOVERY_BOUND)
            report("reset of every connection -> pod bound", time.monotonic() - start)
            proxy.refuse()  # reset, and new connections too, for 10 s
            create(cp, ns, pod("during-refuse", run.scheduler))
            time.sleep(10)  # the outage's length
            assert not node_of(cp, ns, "during-refuse")
            proxy.heal()
            healed = time.monotonic()
            wait_until(lambda: node_of(cp, ns, "during-refuse"), "bound after refusals ended", within=RECOVERY_BOUND)
            report("connections refused 10 s -> pod bound after heal", time.monotonic() - healed)


def test_scheduling_goes_on_through_a_slow_link(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, {"a": {}}):  # noqa: SIM117 - proxy first
        with running(cp, tmp_path, run.config(), kubeconfig=proxied_kubeconfig(cp, proxy, tmp_path)):
            proxy.delay(1.0)  # every chunk held 1 s each way
            start = time.monotonic()
            names = [f"slow{i}" for i in range(3)]
            create(cp, ns, *(pod(n, run.scheduler) for n in names))
            wait_until(lambda: all_bound(cp, ns, names), "bound through a slow link", within=RECOVERY_BOUND)
            report("1 s delay per chunk -> 3 pods bound", time.monotonic() - start)


def test_scheduling_recovers_after_the_apiserver_restarts(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    with nodes(cp, run, {"a": {}}), running(cp, tmp_path, run.config()) as sched:
        create(cp, ns, pod("before", run.scheduler))
        wait_until(lambda: node_of(cp, ns, "before"), "a pod bound")
        cp.restart_apiserver()
        ready = time.monotonic()
        create(cp, ns, pod("after", run.scheduler))
        wait_until(lambda: node_of(cp, ns, "after"), "bound after the API server restarted", within=RECOVERY_BOUND)
        report("kube-apiserver restarted -> pod bound after it was ready", time.monotonic() - ready)
        assert sched.proc is not None and sched.proc.poll() is None


def test_sigterm_ends_the_scheduler_within_seconds_while_the_link_is_silent(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, {"a": {}}):
        config = run.config(leader_elect=True)
        with running(cp, tmp_path, config, kubeconfig=proxied_kubeconfig(cp, proxy, tmp_path)) as sched:
            wait_until(lambda: "became the leader" in sched.tail(), "leading")
            create(cp, ns, pod("before", run.scheduler))
            wait_until(lambda: node_of(cp, ns, "before"), "a pod bound")
            proxy.blackhole()
            create(cp, ns, pod("stuck", run.scheduler))
            assert sched.proc is not None
            sched.proc.send_signal(signal.SIGTERM)
            start = time.monotonic()
            wait_until(lambda: sched.proc is not None and sched.proc.poll() is not None, "the process ended", within=20)
            took = time.monotonic() - start
            report("SIGTERM with every connection silent -> process ended", took)
            assert took < 12, sched.tail()
            assert sched.proc.returncode == 0, sched.tail()


def test_a_leader_cut_off_stops_before_the_standby_takes_over(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    config = run.config(leader_elect=True)  # lease 4 s, renew deadline 3 s, retry 0.5 s
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, {"a": {}}):
        kubeconfig = proxied_kubeconfig(cp, proxy, tmp_path)
        with running(cp, tmp_path, config, "leader", kubeconfig=kubeconfig) as leader:
            wait_until(lambda: "became the leader" in leader.tail(), "the first replica leading")
            with running(cp, tmp_path, config, "standby") as standby:
                create(cp, ns, pod("p1", run.scheduler))
                wait_until(lambda: node_of(cp, ns, "p1"), "p1 bound by the leader")
                lease = f"kubesched-{run.id}"
                assert leader.metric("leader_election_master_status", name=lease) == 1
                assert standby.metric("leader_election_master_status", name=lease) == 0
                proxy.blackhole()
                cut = time.monotonic()
                exited: list[float] = []
                took_over: list[float] = []

                def watch() -> bool:
                    now = time.monotonic()
                    if not exited and leader.proc is not None and leader.proc.poll() is not None:
                        exited.append(now)
                    if not took_over and "became the leader" in standby.tail():
                        took_over.append(now)
                    return bool(exited and took_over)

                wait_until(watch, "the leader gone and the standby leading", within=30)
                report("leader cut off -> old leader stopped (exit 1)", exited[0] - cut)
                report("leader cut off -> standby leads", took_over[0] - cut)
                assert leader.proc is not None and leader.proc.returncode == 1
                assert "leader election lost" in leader.tail()
                # The old leader stopped before the standby may have led: no two schedulers at once.
                assert exited[0] < took_over[0], (exited, took_over)
                proxy.heal()
                create(cp, ns, pod("p2", run.scheduler))
                wait_until(lambda: node_of(cp, ns, "p2"), "p2 bound by the new leader")
                assert (
                    standby.metric("scheduler_schedule_attempts_total", profile=run.scheduler, result="scheduled") == 1
                )
        cp.api("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched-{run.id}")


async def test_a_binding_whose_answer_is_cut_raises_answer_lost_and_was_applied(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, {"a": {}}):
        client = KubeClient(from_kubeconfig(proxied_kubeconfig(cp, proxy, tmp_path)))
        try:
            create(cp, ns, pod("cut", "nobody"))
            await client.request("GET", f"/api/v1/namespaces/{ns}/pods/cut")  # a kept connection
            proxy.cut_answers()
            binding: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "cut", "namespace": ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": run.node("a")},
            }
            with pytest.raises(AnswerLost):
                await client.request("POST", f"/api/v1/namespaces/{ns}/pods/cut/binding", binding)
            assert node_of(cp, ns, "cut") == run.node("a")  # the server did it; the client was told "unknown"
        finally:
            await client.aclose()


async def test_events_written_during_an_outage_appear_after_it(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, ns = control_plane, kube_namespace
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy:
        client = KubeClient(from_kubeconfig(proxied_kubeconfig(cp, proxy, tmp_path)), 2.0, connect_timeout=1.0)

        async def call(method: str, path: str, body: Any, content_type: str) -> bytes:
            return await client.request(method, path, body, content_type=content_type)

        recorder = EventRecorder(call, retry_sleep=1.0)
        try:
            writes = []
            for mode in ("refuse", "blackhole"):
                getattr(proxy, mode)()
                event = {
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": {"name": f"outage-{mode}", "namespace": ns},
                    "eventTime": "2026-01-01T00:00:00.000000Z",
                    "reportingController": "kubesched-test",
                    "reportingInstance": "kubesched-test-x",
                    "action": "Binding",
                    "reason": "Scheduled",
                    "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": mode, "uid": mode},
                    "note": f"written during {mode}",
                    "type": "Normal",
                }
                write = recorder.record(event)
                assert write is not None
                task = asyncio.ensure_future(write)
                await until(lambda: recorder.retried >= 1, "a failed try during the outage", within=20)
                assert not task.done()
                proxy.heal()
                healed = time.monotonic()
                await asyncio.wait_for(task, 30)
                report(f"events during {mode} 4 s -> written after heal", time.monotonic() - healed)
                writes.append(mode)
            names = {e["regarding"]["name"] for e in events_in(cp, ns)}
            assert names >= {"refuse", "blackhole"}
        finally:
            await client.aclose()


def events_in(cp: ControlPlane, ns: str) -> list[dict[str, Any]]:
    return [e for name in ("refuse", "blackhole") for e in events(cp, ns, name)]
