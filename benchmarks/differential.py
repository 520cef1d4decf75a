"""The differential run at scale: random clusters and pods through kube-scheduler and kubesched, pod by pod.

Run: .venv/bin/python benchmarks/differential.py [--seeds 0-19] [--pods 30] [--names]   (or `make diff`)
Starts its own etcd + kube-apiserver (the harness's binaries) and kube-scheduler, prints each disagreement
(seed, pod, both answers: rerun one with --seeds N) and the table of figures. Exit 1 on a disagreement
that no Known difference explains.
"""

from __future__ import annotations

import argparse
import sys
import time

from kubesched.scheduler.memory import snapshot_decider
from kubesched.testing import build
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.differential.generate import Knobs
from kubesched.testing.differential.runner import Case, Report, run
from kubesched.versions import REFERENCE, parse_release


def seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seeds, default=seeds("0-19"), help="seeds: 0-19 or 3,7,9")
    parser.add_argument("--pods", type=int, default=30, help="pending pods per seed")
    parser.add_argument("--names", action="store_true", help="full nodes to the extender (nodeCacheCapable false)")
    parser.add_argument(
        "--kubernetes-version",
        default=REFERENCE.version,
        help=f"the release (default: the reference {REFERENCE.version})",
    )
    args = parser.parse_args()
    try:
        release = parse_release(args.kubernetes_version)
    except ValueError as err:
        parser.error(f"--kubernetes-version: {err}")

    def show(case: Case) -> None:
        if case.differences:
            print(case.describe(), flush=True)

    began = time.monotonic()
    report = Report()
    try:
        with ControlPlane(build.ensure(release.version, echo=True)) as cp:
            run(
                cp,
                args.seeds,
                snapshot_decider({"percentageOfNodesToScore": 100}, release),
                knobs=Knobs(pending=args.pods),
                node_cache_capable=not args.names,
                progress=show,
                report=report,
            )
    finally:  # the figures so far, also when the run breaks off
        took = time.monotonic() - began
        print(f"\nv{release.version}: {len(report.cases)} pods of {len(args.seeds)} seeds x {args.pods} in {took:.0f}s")
        print(report.table())
    return 1 if report.unexplained() else 0


if __name__ == "__main__":
    sys.exit(main())
