"""Benchmark: 10,000 pods onto 5,000 nodes with the default plugins, in memory (`--cluster` mode's code path).

Run: .venv/bin/python benchmarks/scheduler_memory.py [--nodes 5000] [--pods 10000] [--repeat 3] [--batching on|off|both]
Prints a table; the target is >= 5,000 pods/s. Opportunistic batching (kube-scheduler's OpportunisticBatching
gate, on by default) is measured on, off, or both alternately (the default), in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import build_default


def nodes(n: int) -> list[Node]:
    return [
        msgspec.convert(
            {
                "metadata": {
                    "name": f"node-{i}",
                    "labels": {"kubernetes.io/hostname": f"node-{i}", "topology.kubernetes.io/zone": f"zone-{i % 3}"},
                },
                "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
            },
            Node,
        )
        for i in range(n)
    ]


def pods(n: int) -> list[Pod]:
    return [
        msgspec.convert(
            {
                "metadata": {"name": f"pod-{i}", "namespace": "bench", "uid": f"uid-{i}", "labels": {"app": "bench"}},
                "spec": {
                    "schedulerName": "default-scheduler",
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ],
                },
            },
            Pod,
        )
        for i in range(n)
    ]


async def once(n_nodes: int, n_pods: int, batching: bool = True) -> tuple[float, float, int, int]:
    clock = ManualClock()
    cluster = MemoryCluster(nodes(n_nodes), pods(n_pods))
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock, batching=batching)
    cluster.attach(scheduler)
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    await run_until_settled(scheduler, clock)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    bound = sum(1 for p in cluster.pods.values() if p.spec.node_name)
    return wall, cpu, bound, len({p.spec.node_name for p in cluster.pods.values() if p.spec.node_name})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batching", choices=("on", "off", "both"), default="both")
    args = parser.parse_args()
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.batching]
    header = ("run", "batching", "nodes", "pods", "bound", "nodes used", "wall s", "pods/s", "CPU s/1000 pods")
    widths = (3, 8, 6, 6, 6, 10, 7, 8, 15)
    print("  ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    rates: dict[bool, list[float]] = {mode: [] for mode in modes}
    for run in range(1, args.repeat + 1):
        for mode in modes:  # alternated, so the machine's noise falls on both alike
            wall, cpu, bound, used = asyncio.run(once(args.nodes, args.pods, mode))
            rates[mode].append(bound / wall)
            print(
                f"{run:>3}  {'on' if mode else 'off':>8}  {args.nodes:>6}  {args.pods:>6}  {bound:>6}  {used:>10}"
                f"  {wall:>7.2f}  {bound / wall:>8.0f}  {cpu / bound * 1000:>15.3f}"
            )
    for mode, got in rates.items():
        median = sorted(got)[len(got) // 2]
        label = "on" if mode else "off"
        print(f"batching {label}: best {max(got):.0f} pods/s, median {median:.0f} pods/s (target >= 5000)")


if __name__ == "__main__":
    main()
