"""Benchmark: the live scheduler's decision records (`--decision-records`, issue 18 item 3): memory per 10,000
pods and the cost of recording one decision, beside the same reports without records.

Run: .venv/bin/python benchmarks/decision_records.py [--pods 10000] [--repeat 5]
Each pod gets a FailedScheduling message of kube-scheduler's usual length (~200 characters). Memory is the
traced allocation (tracemalloc) the records hold; time is per `RecordingWriter.failed` call over a writer
that does nothing, minus the same calls to that writer directly (median of repeats).
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

from kubesched.core.podinfo import PodInfo
from kubesched.scheduler.decisions import DecisionRecords, RecordingWriter
from kubesched.testing.builders import make_pod

MESSAGE = (
    "0/5000 nodes are available: 1200 Insufficient cpu, 3000 node(s) had untolerated taint(s), 800 node(s) didn't"
    " match Pod's node affinity/selector. preemption: 0/5000 nodes are available: 5000 Preemption is not helpful."
)


class Quiet:
    """A writer that reports nowhere (the cost measured is the recording's alone)."""

    binds_inline = True

    def failed(self, pod: PodInfo, scheduler_name: str, reason: str, message: str, nominated: str | None) -> None:
        return None

    def scheduled(self, pod: PodInfo, node: str, scheduler_name: str) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    pods = [make_pod(f"p-{i}", namespace="team-a", uid=f"uid-{i}") for i in range(args.pods)]
    quiet = Quiet()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    records = DecisionRecords(args.pods)
    writer = RecordingWriter(quiet, records)  # type: ignore[arg-type]
    for i, pod in enumerate(pods):  # a message of each pod's own, as in a real cluster (not one shared string)
        writer.failed(pod, "default-scheduler", "Unschedulable", f"{MESSAGE} ({i})", None)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    with_records, without = [], []
    for _ in range(args.repeat):
        began = time.perf_counter()
        for pod in pods:
            writer.failed(pod, "default-scheduler", "Unschedulable", MESSAGE, None)
        with_records.append((time.perf_counter() - began) / len(pods))
        began = time.perf_counter()
        for pod in pods:
            quiet.failed(pod, "default-scheduler", "Unschedulable", MESSAGE, None)
        without.append((time.perf_counter() - began) / len(pods))
    rec, bare = statistics.median(with_records), statistics.median(without)
    print("| pods | memory held | per record | µs per report, records on | records off | recording's cost |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {args.pods:,} | {held / 2**20:.1f} MiB | {held / args.pods:.0f} B | {rec * 1e6:.2f} | {bare * 1e6:.2f}"
        f" | {(rec - bare) * 1e6:.2f} µs |"
    )


if __name__ == "__main__":
    main()
