"""`kubesched snapshot` against the real kube-apiserver: what it lists (never Secrets or ConfigMaps), in pages,
through connection resets and an API server restart; the file it writes places a pending pod where the live
kube-scheduler places its twin. And `kubectl get nodes,pods -A -o yaml` output, read as the server stored it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster.kubeclient import KubeClient, from_kubeconfig
from kubesched.cluster.snapshot import Snapshot, take
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
from tests.integration.test_apiserver_faults import proxied_kubeconfig
from tests.integration.test_scheduler_e2e import Run, create, node_of, nodes, pod

pytestmark = pytest.mark.controlplane


def kubesched(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kubesched", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


@contextlib.contextmanager
def cluster_objects(cp: ControlPlane, run: Run, ns: str) -> Iterator[str]:
    """Three nodes (a is nearly full, c small), a bound pod, a PriorityClass, a PDB, a Secret, a ConfigMap,
    a StorageClass and a claim; yields the scheduler name nobody serves (its pods stay pending)."""
    nobody = f"nobody-{run.id}"
    specs = {
        "a": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        "b": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        "c": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    }
    priority_class = f"snap-{run.id}"
    storage_class = f"snap-{run.id}"
    with nodes(cp, run, specs):
        try:
            cp.api("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": priority_class}, "value": 1000,
            })  # fmt: skip
            cp.api("POST", "/apis/storage.k8s.io/v1/storageclasses", {
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": storage_class},
                "provisioner": "example.com/none", "volumeBindingMode": "WaitForFirstConsumer",
            })  # fmt: skip
            create(cp, ns, pod("busy", nobody, cpu="3", nodeName=run.node("a")))
            create(cp, ns, pod("pending", nobody, cpu="1500m", priority_class=priority_class))
            cp.api("POST", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
            })  # fmt: skip
            cp.api("POST", f"/api/v1/namespaces/{ns}/secrets", {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"},
                "stringData": {"password": f"s3cr3t-{run.id}"},
            })  # fmt: skip
            cp.api("POST", f"/api/v1/namespaces/{ns}/configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                "data": {"key": f"cfg-{run.id}"},
            })  # fmt: skip
            cp.api("POST", f"/api/v1/namespaces/{ns}/persistentvolumeclaims", {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                         "resources": {"requests": {"storage": "1Gi"}}},
            })  # fmt: skip
            yield nobody
        finally:
            with contextlib.suppress(Exception):
                cp.api("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{priority_class}")
            with contextlib.suppress(Exception):
                cp.api("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{storage_class}")


def schedule_file(path: Path, run: Run, scheduler: str, tmp_path: Path) -> dict[str, str | None]:
    """`kubesched scheduler run --cluster` on the file, confined to the run's nodes: pod -> node."""
    config = tmp_path / f"file-{scheduler}.yaml"
    config.write_text(yaml.safe_dump(run.config(profiles=[{"schedulerName": scheduler}])))
    done = kubesched("scheduler", "run", "--cluster", str(path), "--config", str(config), "-o", "json")
    assert done.returncode == 0, done.stderr
    return {p["pod"]: p["node"] for p in json.loads(done.stdout)["placements"]}


def live_decision(cp: ControlPlane, run: Run, ns: str) -> str:
    """Where kube-scheduler puts the pending pod's twin (same spec, a scheduler name it serves)."""
    kube_name = f"kube-{run.id}"
    kube = cp.start_scheduler(run.config(profiles=[{"schedulerName": kube_name}]), name=f"snap-{run.id}")
    try:
        twin = pod("twin", kube_name, cpu="1500m", priority_class=f"snap-{run.id}")
        create(cp, ns, twin)
        return cp.wait_pod_bound(ns, "twin")
    finally:
        kube.stop()


def test_a_snapshot_places_the_pending_pod_where_kube_scheduler_does(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    with cluster_objects(cp, run, ns) as nobody:
        out = tmp_path / "cluster.yaml"
        done = kubesched("snapshot", "--kubeconfig", str(cp.admin_kubeconfig), "-o", str(out), "--chunk-size", "2")
        assert done.returncode == 0, done.stderr
        text = out.read_text()
        for absent in ("Secret", "ConfigMap", f"s3cr3t-{run.id}", f"cfg-{run.id}", "managedFields", "last-applied"):
            assert absent not in text, absent
        items = yaml.safe_load(text)["items"]
        kinds = {i["kind"] for i in items}
        assert {"Node", "Pod", "Namespace", "PriorityClass", "PodDisruptionBudget", "StorageClass"} <= kinds
        assert "PersistentVolumeClaim" in kinds
        (pending,) = [i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "pending"]
        assert pending["spec"]["priority"] == 1000 and "nodeName" not in pending["spec"]

        placed = schedule_file(out, run, nobody, tmp_path)
        assert placed == {f"{ns}/pending": run.node("b")}  # a is full, c fits but has less room
        assert live_decision(cp, run, ns) == run.node("b")
        assert node_of(cp, ns, "pending") is None  # the snapshot changed nothing in the cluster


def test_pages_are_followed_to_the_end(control_plane: ControlPlane, kube_namespace: str) -> None:
    cp, run = control_plane, Run()
    conn = from_kubeconfig(cp.admin_kubeconfig)

    async def both() -> tuple[Snapshot, Snapshot]:
        client = KubeClient(conn)
        try:
            return await take(client, chunk_size=1), await take(client, chunk_size=10_000)
        finally:
            await client.aclose()

    with nodes(cp, run, {str(i): {} for i in range(5)}) as names:
        paged, whole = asyncio.run(both())
    lists = len(whole.objects)
    assert whole.requests == lists + 1  # everything fits one page each; and the discovery of DRA
    # One object per page: a list of n objects takes n requests (the last page has no continue token).
    assert paged.requests >= sum(max(1, len(objs)) for objs in paged.objects.values()) > lists
    for kind in ("Node", "Namespace", "Pod"):
        listed = sorted(o.metadata.name for o in paged.objects[kind])
        assert listed == sorted(o.metadata.name for o in whole.objects[kind]), kind
        assert len(listed) == len(set(listed))
    assert set(names) <= {o.metadata.name for o in paged.objects["Node"]}


def listing_in_background(conn: Any, result: dict[str, Any]) -> threading.Thread:
    async def go() -> None:
        client = KubeClient(conn, 30.0)
        try:
            result["snapshot"] = await take(client, chunk_size=1)
        except Exception as err:  # the test reports whatever it was
            result["error"] = err
        finally:
            await client.aclose()

    thread = threading.Thread(target=lambda: asyncio.run(go()), daemon=True)
    thread.start()
    return thread


def test_connections_reset_mid_pagination_are_asked_again(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp = control_plane
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy:
        conn = from_kubeconfig(proxied_kubeconfig(cp, proxy, tmp_path))
        # Every chunk held 0.3 s each way: a request is in flight nearly all the time, so a reset lands inside
        # one (between requests the pool would just open a new connection).
        proxy.delay(0.3)
        result: dict[str, Any] = {}
        thread = listing_in_background(conn, result)
        for _ in range(3):
            time.sleep(1.0)
            proxy.reset()  # every open connection reset once; the page in flight is lost
        thread.join(120)
    assert "error" not in result, result.get("error")
    snap: Snapshot = result["snapshot"]
    assert snap.retries >= 1, "no reset landed inside a request: nothing was tested"
    live = {n["metadata"]["name"] for n in cp.api("GET", "/api/v1/namespaces")["items"]}
    assert {o.metadata.name for o in snap.objects["Namespace"]} == live


def test_an_apiserver_restart_mid_pagination_gives_a_whole_file_or_none(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp = control_plane
    with FaultProxy("127.0.0.1", cp.port or 0) as proxy:
        kubeconfig = proxied_kubeconfig(cp, proxy, tmp_path)
        proxy.delay(0.3)
        out = tmp_path / "cluster.yaml"
        cmd = [sys.executable, "-m", "kubesched", "snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)]
        child = subprocess.Popen([*cmd, "--chunk-size", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)
        assert child.poll() is None, "the listing ended before the restart: nothing was tested"
        cp.restart_apiserver()
        _, stderr = child.communicate(timeout=180)
    print(
        f"\nSNAPSHOT across a kube-apiserver restart: exit {child.returncode}; {stderr.count('asking again')} retries"
    )
    if child.returncode == 0:
        items = yaml.safe_load(out.read_text())["items"]
        listed = {i["metadata"]["name"] for i in items if i["kind"] == "Namespace"}
        assert listed == {n["metadata"]["name"] for n in cp.api("GET", "/api/v1/namespaces")["items"]}
        assert "asking again" in stderr  # it did go through the restart
    else:
        assert child.returncode == 2 and "nothing was written to" in stderr and "Traceback" not in stderr, stderr
        assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".cluster.yaml")] == []  # no temporary left


def test_kubectl_get_nodes_pods_output_schedules_like_the_cluster(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    """`kubectl get nodes,pods -A -o yaml`: a List of both kinds, as stored (managedFields, a PriorityClass
    the file lacks named by a pod whose priority is set): read, and the pending pod placed as by the cluster."""
    cp, run, ns = control_plane, Run(), kube_namespace
    with cluster_objects(cp, run, ns) as nobody:
        items = []
        for path, kind in (("/api/v1/nodes", "Node"), ("/api/v1/pods", "Pod")):
            for item in cp.api("GET", path, params={"showManagedFields": "true"})["items"]:
                items.append({"apiVersion": "v1", "kind": kind, **item})  # what kubectl adds to each item
        assert any("managedFields" in i["metadata"] for i in items)
        path = tmp_path / "kubectl.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}))
        assert schedule_file(path, run, nobody, tmp_path) == {f"{ns}/pending": run.node("b")}


def test_a_namespace_limits_the_pending_pods_not_what_occupies_the_nodes(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    other = f"other-{run.id}"
    with cluster_objects(cp, run, ns) as nobody:
        cp.create_namespace(other)
        try:
            create(cp, other, pod("elsewhere-busy", nobody, cpu="3", nodeName=run.node("b")))
            create(cp, other, pod("elsewhere-pending", nobody, cpu="100m"))
            out = tmp_path / "team.json"
            args = ("--kubeconfig", str(cp.admin_kubeconfig), "--namespace", ns, "-o", str(out), "--chunk-size", "3")
            done = kubesched("snapshot", *args)
            assert done.returncode == 0, done.stderr
            pods = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in json.loads(out.read_text())["items"]
                    if i["kind"] == "Pod"}  # fmt: skip
            assert (other, "elsewhere-busy") in pods and (other, "elsewhere-pending") not in pods
            assert {(ns, "busy"), (ns, "pending")} <= pods
            # b is taken by the other namespace's pod: the pending pod goes to c, the one node with room.
            assert schedule_file(out, run, nobody, tmp_path) == {f"{ns}/pending": run.node("c")}
        finally:
            cp.delete_namespace(other)
