"""Benchmark: `kubesched explain` of one pod against 5,000 and 15,000 nodes (issue 18: < 100 ms after loading
at 5,000 nodes, < 1 s at 15,000; issue 20 item 8).

Run: .venv/bin/python benchmarks/explain_scale.py [--nodes 5000,15000] [--pods-per-node 10] [--repeat 3]
Nodes in three zones, every tenth tainted; 10 bound pods per node. Two pods: one that fits (its cycle, every
plugin on every node, the scores of the sample) and one that fits nowhere (the same, then "what would help":
the filters run again for each change). "load" is building the in-memory cluster and scheduler alone (what
`scheduler run --cluster` also pays); "explain" is the whole call minus that load (median of repeats).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.explain.evaluate import Objects, explain
from kubesched.scheduler.explain.model import Explanation
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.profiles.manager import build_default


def nodes(n: int) -> list[Node]:
    out = []
    for i in range(n):
        spec = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]} if i % 10 == 0 else {}
        body = {
            "metadata": {
                "name": f"node-{i}",
                "labels": {"kubernetes.io/hostname": f"node-{i}", "topology.kubernetes.io/zone": f"zone-{i % 3}"},
            },
            "spec": spec,
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        }
        out.append(msgspec.convert(body, Node))
    return out


def pod(name: str, cpu: str, node: str = "") -> Pod:
    body = {
        "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}", "labels": {"app": "bench"}},
        "spec": {
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}],
        },
    }  # fmt: skip
    return msgspec.convert(body, Pod)


async def load(objects: Objects) -> None:
    cluster = MemoryCluster(objects.nodes, objects.pods)
    cluster.attach(Scheduler(ClusterCache(), cluster, build_default, clock=ManualClock(), batching=False))


def median_time(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        began = time.perf_counter()
        asyncio.run(fn())  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="5000,15000")
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| nodes | bound pods | pod | load s | explain s (after load) | whole call s | node |")
    print("|---:|---:|---|---:|---:|---:|---|")
    for n in (int(x) for x in args.nodes.split(",")):
        the_nodes = nodes(n)
        bound = [pod(f"b-{i}-{j}", "500m", f"node-{i}") for i in range(n) for j in range(args.pods_per_node)]
        for label, cpu in (("fits", "1"), ("fits nowhere", "32")):
            objects = Objects(the_nodes, [*bound, pod("target", cpu)])
            loaded = median_time(lambda o=objects: load(o), args.repeat)
            got: dict[str, Explanation] = {}

            async def one(o: Objects = objects, into: dict[str, Explanation] = got) -> None:
                into["ex"] = await explain(build_default, o, "bench/target", "v1.37.2")

            whole = median_time(one, args.repeat)
            ex = got["ex"]
            print(
                f"| {n:,} | {len(bound):,} | {label} | {loaded:.2f} | {max(whole - loaded, 0):.3f} | {whole:.2f}"
                f" | {ex.node or '-'} ({len(ex.help)} helps) |"
            )


if __name__ == "__main__":
    main()
