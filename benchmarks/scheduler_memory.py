"""Benchmark: 10,000 pods onto 5,000 nodes with the default plugins, in memory (`--cluster` mode's code path).

Run: .venv/bin/python benchmarks/scheduler_memory.py [--nodes 5000] [--pods 10000] [--repeat 3]
Prints a table; the target is >= 5,000 pods/s.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.pluginmanager import build_default
from kubesched.scheduler.queue import ManualClock
from kubesched.scheduler.scheduler import Scheduler


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


async def once(n_nodes: int, n_pods: int) -> tuple[float, float, int, int]:
    clock = ManualClock()
    cluster = MemoryCluster(nodes(n_nodes), pods(n_pods))
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock)
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
    args = parser.parse_args()
    header = ("run", "nodes", "pods", "bound", "nodes used", "wall s", "pods/s", "CPU s/1000 pods")
    widths = (3, 6, 6, 6, 10, 7, 8, 15)
    print("  ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    rates = []
    for run in range(1, args.repeat + 1):
        wall, cpu, bound, used = asyncio.run(once(args.nodes, args.pods))
        rates.append(bound / wall)
        print(
            f"{run:>3}  {args.nodes:>6}  {args.pods:>6}  {bound:>6}  {used:>10}  {wall:>7.2f}  {bound / wall:>8.0f}"
            f"  {cpu / bound * 1000:>15.3f}"
        )
    print(f"best {max(rates):.0f} pods/s, median {sorted(rates)[len(rates) // 2]:.0f} pods/s (target >= 5000)")


if __name__ == "__main__":
    main()
