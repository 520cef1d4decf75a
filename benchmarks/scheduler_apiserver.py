"""Benchmark: our scheduler and kube-scheduler (the reference release), each binding 10,000 pods onto 5,000 nodes of the
harness's real kube-apiserver, both with client qps/burst 5,000 (as kube-scheduler's scheduler_perf does).

Run: .venv/bin/python benchmarks/scheduler_apiserver.py [--nodes 5000] [--pods 10000] [--order A,B]
For each scheduler: the pods are created first (pending), then the scheduler starts; the clock runs from
the first pod scheduled to the last (each scheduler's own scheduler_schedule_attempts_total{result="scheduled"},
polled every 0.1 s), and CPU seconds are the scheduler process's own
(user + system, from /proc) over the same span. Prints a table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import yaml

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def make_nodes(cp: ControlPlane, n: int) -> None:
    alloc = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    labels = lambda i: {"topology.kubernetes.io/zone": f"zone-{i % 3}"}  # noqa: E731
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: cp.create_node(f"bench-{i}", labels=labels(i), allocatable=alloc), range(n)))


def make_pods(cp: ControlPlane, ns: str, scheduler: str, n: int) -> None:
    def one(i: int) -> None:
        cp.api(
            "POST",
            f"/api/v1/namespaces/{ns}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p-{i}", "labels": {"app": "bench"}},
                "spec": {
                    "schedulerName": scheduler,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ],
                },
            },
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(n)))


def scheduled(url: str, profile: str) -> float:
    """scheduler_schedule_attempts_total{result="scheduled"} of one scheduler's /metrics (both expose it)."""
    try:
        text = httpx.get(f"{url}/metrics", verify=False, timeout=5).text
    except httpx.HTTPError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("scheduler_schedule_attempts_total{") and 'result="scheduled"' in line and profile in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def measure(cp: ControlPlane, which: str, n_pods: int, workdir: Path, batching: bool = True) -> dict[str, float]:
    ns = f"bench-{which}"
    scheduler_name = f"bench-{which}"
    cp.create_namespace(ns)
    try:
        make_pods(cp, ns, scheduler_name, n_pods)
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"qps": 5000, "burst": 5000},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": scheduler_name}],
        }
        if which == "kube-scheduler":
            sched = cp.start_scheduler(config, name=f"bench-kube-{int(time.time())}")
            pid, url = sched.pid or 0, sched.url
            stop = sched.stop
        else:
            path = workdir / "kubesched.yaml"
            path.write_text(yaml.safe_dump(config))
            log = (workdir / "kubesched.log").open("ab")
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            proc = subprocess.Popen(
                [sys.executable, "-m", "kubesched", "scheduler", "run", "--config", str(path), "--kubeconfig",
                 str(cp.admin_kubeconfig), "--listen", f"127.0.0.1:{port}", "--log-level", "warning",
                 "--feature-gates", f"OpportunisticBatching={str(batching).lower()}"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            pid = proc.pid

            def stop() -> None:
                proc.terminate()
                proc.wait(30)

        deadline = time.monotonic() + 1800
        first = cpu_first = 0.0
        while True:
            done = scheduled(url, scheduler_name)
            now = time.perf_counter()
            if done and not first:
                first, cpu_first = now, cpu_seconds(pid)
            if done >= n_pods:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{which}: only {done:.0f}/{n_pods} scheduled after 30 min")
            time.sleep(0.1)
        cpu_end = cpu_seconds(pid)
        stop()
        span = now - first
        cpu = cpu_end - cpu_first
        return {"pods": n_pods, "seconds": span, "pods_per_s": n_pods / span, "cpu_per_1000": cpu / n_pods * 1000}
    finally:
        # Deleting 10,000 pods takes longer than the harness client's default timeout: do it first, patiently.
        cp.client.request("DELETE", f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": "0"}, timeout=900)
        cp.delete_namespace(ns, timeout=300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument(
        "--order", default="kube-scheduler,kubesched", help="which run, first to last (one after the other)"
    )
    parser.add_argument("--batching", choices=("on", "off"), default="on", help="kubesched's OpportunisticBatching")
    args = parser.parse_args()
    order = args.order.split(",")
    if not order or len(set(order)) != len(order) or not set(order) <= {"kube-scheduler", "kubesched"}:
        parser.error("--order: kube-scheduler and/or kubesched, each at most once")
    with tempfile.TemporaryDirectory() as tmp, ControlPlane() as cp:
        t = time.perf_counter()
        make_nodes(cp, args.nodes)
        print(f"{args.nodes} nodes created in {time.perf_counter() - t:.0f}s", flush=True)
        results = {}
        for which in order:
            results[which] = measure(cp, which, args.pods, Path(tmp), args.batching == "on")
            print(f"{which}: {results[which]}", flush=True)
    print()
    print(f"{'scheduler':<16} {'nodes':>6} {'pods':>6} {'seconds':>8} {'pods/s':>8} {'CPU s / 1000 pods':>18}")
    for which, r in results.items():
        print(
            f"{which:<16} {args.nodes:>6} {r['pods']:>6.0f} {r['seconds']:>8.1f} {r['pods_per_s']:>8.0f}"
            f" {r['cpu_per_1000']:>18.2f}"
        )
    if len(results) == 2:
        ratio = results["kubesched"]["pods_per_s"] / results["kube-scheduler"]["pods_per_s"]
        print(f"kubesched / kube-scheduler throughput: {ratio:.2f}x (target >= 1.0)")


if __name__ == "__main__":
    main()
