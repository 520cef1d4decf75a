"""Benchmark: a 16-cell sweep on a 2-worker Dask LocalCluster against the same cells one after another.

The cells: N generated nodes (16 cpu / 64Gi, three zones) and a Deployment of P pods (500m / 1Gi) under
4 NodeResourcesFit weights × 2 BalancedAllocation weights × 2 scoring strategies = 16 configurations, one
scenario. "Serial" runs the cells in this process (`simulate --sweep --workers 1`); "Dask" submits them to a
LocalCluster of 2 worker processes started beforehand (an existing cluster, as `--dask ADDRESS`), timed
from the first submission (files scattered included) to the last result; "local pool" is the default
engine (2 spawned processes, their start included). The three take turns, their order rotating from one
repetition to the next, so the shared machine's swings fall on all of them; the tables of all runs must be
equal. "Cells running at once" is the cells' own seconds summed over the wall time: how well an engine keeps
its workers busy, whatever share of the CPUs the machine's other work leaves them.

Run: .venv/bin/python benchmarks/sweep_dask.py [--nodes 150] [--pods 600] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kubesched.scheduler.sweep.execute import Prepared, ordered, prepare, run_dask, run_local, run_serial
from kubesched.scheduler.sweep.rank import rank
from kubesched.scheduler.sweep.spec import read_sweep


def files(where: Path, nodes: int, pods: int) -> Path:
    (where / "cluster.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": []}, sort_keys=False)
    )
    scenario = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "steps": [
            {
                "name": "nodes",
                "addNodes": {
                    "count": nodes,
                    "namePrefix": "n",
                    "zones": ["a", "b", "c"],
                    "template": {"status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}},
                },
            },
            {
                "name": "pods",
                "addPods": {
                    "replicas": pods,
                    "name": "web",
                    "namespace": "default",
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                            ]
                        },
                    },
                },
            },
        ],
    }
    (where / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    sweep = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Sweep",
        "metadata": {"name": "bench"},
        "cluster": "cluster.yaml",
        "scenarios": ["scenario.yaml"],
        "axes": {
            "weights": {"NodeResourcesFit": [1, 2, 5, 10], "NodeResourcesBalancedAllocation": [1, 5]},
            "pluginArgs": {
                "NodeResourcesFit": [{"scoringStrategy": {"type": t}} for t in ("LeastAllocated", "MostAllocated")]
            },
        },
        "objective": {"maximize": {"podsPlaced": 1, "nodesUsed": -1}},
    }
    (where / "sweep.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    return where / "sweep.yaml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=150)
    ap.add_argument("--pods", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from distributed import LocalCluster  # here, not at the top: the local pool's spawned processes import this file

    with tempfile.TemporaryDirectory() as tmp:
        sweep = read_sweep(files(Path(tmp), args.nodes, args.pods))
        prepared: Prepared = prepare(sweep)
        assert len(prepared.cells) == 16
        busy: dict[str, list[float]] = {}  # the cells' own seconds over the wall time: how many ran at once
        times: dict[str, list[float]] = {
            "serial (this process)": [],
            "Dask LocalCluster, 2 workers": [],
            "local pool, 2 processes": [],
        }
        tables = []
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            labels = list(times)
            for rep in range(args.repeat):
                for label in labels[rep % 3 :] + labels[: rep % 3]:  # the order rotates: swings fall on all
                    start = time.perf_counter()
                    if label.startswith("serial"):
                        results = run_serial(prepared)
                    elif label.startswith("Dask"):
                        results = asyncio.run(run_dask(prepared, cluster.scheduler_address))
                    else:
                        results = asyncio.run(run_local(prepared, workers=2))
                    times[label].append(time.perf_counter() - start)
                    busy.setdefault(label, []).append(sum(r.seconds for r in results.values()) / times[label][-1])
                    load = os.getloadavg()[0]
                    print(
                        f"  run {rep + 1}  {label:<28} {times[label][-1]:7.2f} s   load average {load:.1f}", flush=True
                    )
                    result = rank(sweep, ordered(prepared, results), engine=label, kubernetes_version="")
                    tables.append([(r.rank, r.id, r.objective, r.metrics) for r in result.configurations])
        assert all(t == tables[0] for t in tables), "the engines' tables differ"
        cell = statistics.median(r.seconds for r in results.values())
        base = statistics.median(times["serial (this process)"])
        print(
            f"16 cells ({args.nodes} nodes, {args.pods} pods each; a cell's median {cell:.2f} s), "
            f"{os.cpu_count()} CPUs, median of {args.repeat}; Python {sys.version.split()[0]}"
        )
        print("| engine | wall time (s), median (each run) | speed-up over serial | cells running at once |")
        print("|---|---:|---:|---:|")
        for label, ts in times.items():
            med = statistics.median(ts)
            runs = ", ".join(f"{t:.2f}" for t in ts)
            print(f"| {label} | {med:.2f} ({runs}) | {base / med:.2f}× | {statistics.median(busy[label]):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
