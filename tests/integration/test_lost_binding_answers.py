"""A Binding applied by kube-apiserver whose answer is lost (issue 9 item 9), end to end on the real server.

The scheduler runs in this process, wired as `cli/scheduler_live.py` wires it (one `KubeClient` for the
watches and the `APIServerWriter`, the watches of `cluster.source.scheduler_source`), with the client pointed at a
`FaultProxy`. In-process rather than `kubesched scheduler run`, because the test must start the fault
between two steps that a child process takes at once: the watch has shown both pods, and the first
binding is sent. So the cache is filled first and `Scheduler.run` is started only after the proxy cuts
every answer (watches, reads and writes alike: the fault hits the whole link, as a real one would). This
adds no option to the product only for tests; the one seam used is the order of calls the wiring
makes anyway. Requests are counted by wrapping the client's `request` (it still sends them all).

Scenario: a node with 1 cpu; pod A (600m) and pod B (600m) pending. Answers are cut; the scheduler
binds A (the server applies it; the answer is lost) and tries B. B must not land on the node while
A's fate is unknown, A's Binding must never be sent twice, and after the link heals A is recorded as
bound where the server has it (one `Scheduled` event, no `FailedScheduling`), and B stays pending
(`Insufficient cpu`) until A goes, then takes its room.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.kubeclient import KubeClient, from_kubeconfig
from kubesched.cluster.objects import ClusterObjects
from kubesched.cluster.source import scheduler_source
from kubesched.cluster.workloads import Workloads
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.profiles.manager import build_from_file
from kubesched.scheduler.remote.apiserver import APIServerWriter
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
from kubesched.testing.waiting import until
from tests.integration.test_apiserver_faults import proxied_kubeconfig, report
from tests.integration.test_scheduler_e2e import Run, condition, create, events, node_of, nodes, pod

pytestmark = pytest.mark.controlplane
OUTAGE = 6.0  # seconds the link stays cut after A's answer was lost: B's 1 s backoff passes several times


def server_events(cp: ControlPlane, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in events(cp, ns, name) if e["reason"] == reason]


async def test_a_lost_binding_answer_keeps_the_node_counted_and_is_never_resent(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    caplog.set_level(logging.INFO, logger="kubesched")
    config = tmp_path / "sched.yaml"
    config.write_text(yaml.safe_dump(run.config(), sort_keys=False))
    allocatable = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy, nodes(cp, run, {"a": {"allocatable": allocatable}}):
        node = run.node("a")
        client = KubeClient(from_kubeconfig(proxied_kubeconfig(cp, proxy, tmp_path)), user_agent="kubesched-test")
        sent: list[tuple[str, str]] = []
        request = client.request

        async def counted(method: str, path: str, *args: Any, **kwargs: Any) -> bytes:
            sent.append((method, path))
            return await request(method, path, *args, **kwargs)

        client.request = counted  # type: ignore[method-assign]
        objects = ClusterObjects()
        backend = APIServerWriter(client, qps=500, burst=500, identity="lostanswer-test", objects=objects)
        workloads = Workloads()
        scheduler = Scheduler(
            ClusterCache(),
            backend,
            lambda make_handle: build_from_file(config, make_handle),
            default_selector=workloads.default_selector,
        )
        source = scheduler_source(client, scheduler.cache, scheduler, objects, workloads)
        watching = [asyncio.create_task(source.run())]
        scheduling: asyncio.Task[None] | None = None
        try:
            create(cp, ns, pod("a", run.scheduler, "600m"))
            create(cp, ns, pod("b", run.scheduler, "600m"))
            await until(lambda: scheduler.queue.pending().get("active", 0) == 2, "both pods in the queue")
            uid = {n: cp.api("GET", f"/api/v1/namespaces/{ns}/pods/{n}")["metadata"]["uid"] for n in ("a", "b")}

            proxy.cut_answers()  # from now on every answer is lost: the Binding's, the watches', the reads'
            scheduling = asyncio.create_task(scheduler.run())
            binding_a = f"/api/v1/namespaces/{ns}/pods/a/binding"
            await until(lambda: ("POST", binding_a) in sent and node_of(cp, ns, "a") == node, "A's Binding applied")
            lost = time.monotonic()  # the server applied it; the scheduler cannot know
            # While A's fate is unknown, B is tried (its backoff is 1 s) and never placed on A's room.
            await until(
                lambda: "Insufficient cpu" in (getattr(scheduler.placements.get(f"{ns}/b"), "reason", "") or ""),
                "B tried and found no room",
            )
            while time.monotonic() < lost + OUTAGE:
                assert not node_of(cp, ns, "b"), "B bound on A's room while A's binding was unknown"
                assert scheduler.cache.pod_node(uid["a"]) == node  # A still counted on its node
                await asyncio.sleep(0.2)  # the outage's length is the behaviour: checked all along
            assert any("kept on the node until its state is known" in r.getMessage() for r in caplog.records)
            assert sent.count(("POST", binding_a)) == 1
            assert not any(p.endswith("/pods/b/binding") for _, p in sent)

            proxy.heal()
            healed = time.monotonic()
            await until(lambda: getattr(scheduler.placements.get(f"{ns}/a"), "node", None) == node, "A recorded")
            report("binding answer lost -> pod recorded bound after heal", time.monotonic() - healed)
            await until(lambda: server_events(cp, ns, "a", "Scheduled"), "A's Scheduled event", within=30)
            report("binding answer lost -> Scheduled event on the server after heal", time.monotonic() - healed)
            # The watch is back (it shows B's status patch, written during the cut) and A counted as bound.
            await until(lambda: not scheduler.cache.is_assumed(uid["a"]), "the watch confirming A", within=30)
            report("binding answer lost -> the watch shows the pod after heal", time.monotonic() - healed)
            assert scheduler.cache.pod_node(uid["a"]) == node
            assert node_of(cp, ns, "b") is None
            cond = condition(cp, ns, "b")
            assert cond is not None and cond["status"] == "False" and cond["reason"] == "Unschedulable", cond
            assert "Insufficient cpu" in cond["message"], cond
            # A was bound once: one POST, one Scheduled event, never reported failed, no 409.
            assert sent.count(("POST", binding_a)) == 1
            assert len(server_events(cp, ns, "a", "Scheduled")) == 1
            assert not server_events(cp, ns, "a", "FailedScheduling")
            assert not any("already assigned" in r.getMessage() for r in caplog.records)

            # A goes: its room is B's.
            cp.api("DELETE", f"/api/v1/namespaces/{ns}/pods/a", params={"gracePeriodSeconds": "0"})
            freed = time.monotonic()
            await until(lambda: node_of(cp, ns, "b") == node, "B bound once A is gone", within=30)
            report("pod B (no room while A unknown) bound after A deleted", time.monotonic() - freed)
            assert sent.count(("POST", f"/api/v1/namespaces/{ns}/pods/b/binding")) == 1
        finally:
            proxy.heal()
            scheduler.stop()
            if scheduling is not None:
                await asyncio.wait({scheduling}, timeout=5)
            await scheduler.drain()
            for task in watching:
                task.cancel()
            await asyncio.gather(*watching, return_exceptions=True)
            await backend.aclose(2.0)
            await client.aclose()
