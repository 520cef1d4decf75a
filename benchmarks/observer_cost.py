"""Benchmark: what the framework's observer costs, off (None, the default) and on, over full scheduling cycles.

Run: .venv/bin/python benchmarks/observer_cost.py [--nodes 1000] [--pods 1000] [--repeat 5]
Each round schedules the same pods through `Cycle.run` (default profile, batching off: every cycle filters
and scores) three ways, interleaved: no observer, an observer that does nothing, and one that keeps every
call (what `explain` would). Prints the median pods/s of each and their ratio to "off".
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import random
import statistics
import time
from collections.abc import Sequence

from kubesched.cluster.cache import ClusterCache
from kubesched.framework.build import Profile
from kubesched.framework.interfaces import Handle
from kubesched.framework.status import Status
from kubesched.scheduler.engine.cycle import Cycle
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_node, make_pod


class Nothing:
    def observe(
        self, point: str, plugin: str, nodes: Sequence[str], statuses: Sequence[Status], scores: Sequence[int] | None
    ) -> None:
        pass


class Keeps:
    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def observe(
        self, point: str, plugin: str, nodes: Sequence[str], statuses: Sequence[Status], scores: Sequence[int] | None
    ) -> None:
        self.calls.append((point, plugin, nodes, statuses, scores))


async def once(profile: Profile, nodes: int, pods: int) -> float:
    cache = ClusterCache()
    zones = ("a", "b", "c")
    cache.replace_nodes(
        [make_node(f"n{i}", labels={"topology.kubernetes.io/zone": zones[i % 3]}) for i in range(nodes)]
    )
    cache.synced.set()
    cycle = Cycle(cache, rng=random.Random(1), batching=False)
    batch = [make_pod(f"p{i}", requests={"cpu": "10m", "memory": "16Mi"}) for i in range(pods)]
    gc.collect()
    began = time.perf_counter()
    for pod in batch:
        out = await cycle.run(profile, pod)
        assert out.node is not None
    return pods / (time.perf_counter() - began)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    base = build_default(Handle).profiles["default-scheduler"]
    kinds = {
        "off (observer None)": lambda: base,
        "on, observer does nothing": lambda: dataclasses.replace(base, framework=base.framework.observed(Nothing())),
        "on, observer keeps every call": lambda: dataclasses.replace(base, framework=base.framework.observed(Keeps())),
    }
    got: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(a.repeat):
        for kind, make in kinds.items():
            got[kind].append(await once(make(), a.nodes, a.pods))
    off = statistics.median(got["off (observer None)"])
    print(f"{a.pods} pods onto {a.nodes} nodes, batching off, {a.repeat} rounds interleaved (median pods/s)")
    for kind, values in got.items():
        median = statistics.median(values)
        print(f"{kind:<34}{median:>10.0f} pods/s   {median / off:>6.3f} x off")


if __name__ == "__main__":
    asyncio.run(main())
