"""How long one scrape of the scheduler's /metrics takes, with the plugin histograms of a busy scheduler.

Run: .venv/bin/python benchmarks/metrics_render.py [--renders 50]

Fills SchedulerMetrics as a scheduler with the default profile fills it (every extension point with two
status codes, 14 plugins at 6 points), then times ``render()``: the event loop does nothing else meanwhile,
so each scrape is that long a pause in scheduling. Prints one line: ms per render and the size.
"""

from __future__ import annotations

import argparse
import random
import time

from kubesched.framework.status import Code
from kubesched.scheduler.metrics import SchedulerMetrics

POINTS = ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind")
PLUGINS = [
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--renders", type=int, default=50)
    a = ap.parse_args()
    rng = random.Random(1)
    m = SchedulerMetrics()
    for point in POINTS:
        for code in (Code.SUCCESS, Code.UNSCHEDULABLE):
            m.extension_points.observe((point, code, "default-scheduler"), rng.random() / 100)
    for plugin in PLUGINS:
        for point in POINTS[:6]:
            for code in (Code.SUCCESS, Code.SKIP):
                m.plugin(plugin, point, code, rng.random() / 1000)
    for result in ("scheduled", "unschedulable", "error"):
        m.attempt(result, "default-scheduler", 0.01)
    for attempts in range(1, 16):
        m.scheduled(attempts, 0.5)
    out = m.render()  # the first scrape builds what later ones reuse
    start = time.perf_counter()
    for _ in range(a.renders):
        out = m.render()
    per = (time.perf_counter() - start) / a.renders
    print(f"metrics render: {per * 1000:.1f} ms per scrape, {len(out)} bytes")


if __name__ == "__main__":
    main()
