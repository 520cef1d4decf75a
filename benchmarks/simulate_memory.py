"""Benchmark: `kubesched simulate` against `kubesched scheduler run --cluster` on the same input.

The input of benchmarks/scheduler_memory.py (N nodes of 16 cpu / 64Gi in three zones, P pending pods of
100m / 128Mi); the scenario is one step, `replayPending`. Both sides start from the decoded objects (the
cluster file's reading is the same code for both and left out) and end when every pod is decided:
`scheduler run --cluster` builds MemoryCluster + Scheduler and runs `run_until_settled`; simulate plays the
scenario, with per-pod records off (aggregates only) and on (every decision, every node's state). The three
alternate within each repetition so the shared machine's swings fall on all of them.

Run: .venv/bin/python benchmarks/simulate_memory.py [--nodes 5000] [--pods 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import time

from scheduler_memory import nodes, pods

from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.files import ClusterFile
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import build_default
from kubesched.scheduler.simulate.play import Options, play
from kubesched.scheduler.simulate.scenario import parse

SCENARIO = parse({"steps": [{"replayPending": True}]})


async def scheduler_run(found: ClusterFile) -> int:
    clock = ManualClock()
    cluster = MemoryCluster(found.nodes, found.pods)
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock, rng=random.Random(0))
    cluster.attach(scheduler)
    await run_until_settled(scheduler, clock)
    return sum(1 for p in cluster.pods.values() if p.spec.node_name)


async def simulate(found: ClusterFile, records: bool) -> int:
    run, _ = await play(SCENARIO, found, build_default, Options(seed=0, records=records))
    return run.steps[-1].aggregate.pods_placed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    found = ClusterFile(nodes=nodes(args.nodes), pods=pods(args.pods))
    sides = {
        "scheduler run --cluster": lambda: scheduler_run(found),
        "simulate, records off": lambda: simulate(found, False),
        "simulate, records on": lambda: simulate(found, True),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    cpus: dict[str, list[float]] = {name: [] for name in sides}
    print(f"{'run':>3}  {'side':<26} {'nodes':>6} {'pods':>6} {'placed':>7} {'wall s':>7} {'CPU s':>7}")
    names = list(sides)
    for i in range(args.repeat):
        for name in names[i % len(names) :] + names[: i % len(names)]:  # each side in each position in turn
            gc.collect()
            t, c = time.perf_counter(), time.process_time()
            placed = asyncio.run(sides[name]())
            t, c = time.perf_counter() - t, time.process_time() - c
            times[name].append(t)
            cpus[name].append(c)
            print(f"{i + 1:>3}  {name:<26} {args.nodes:>6} {args.pods:>6} {placed:>7} {t:>7.2f} {c:>7.2f}")
    base, base_cpu = statistics.median(times[names[0]]), statistics.median(cpus[names[0]])
    print()
    print("| side | wall s (median) | × | CPU s (median) | × |")
    print("|---|---|---|---|---|")
    for name in names:
        med, cpu = statistics.median(times[name]), statistics.median(cpus[name])
        print(f"| {name} | {med:.2f} | {med / base:.2f} | {cpu:.2f} | {cpu / base_cpu:.2f} |")


if __name__ == "__main__":
    main()
