"""Benchmark two versions of kubesched in one run: a git ref ("before") and the working tree ("after").

Run: .venv/bin/python benchmarks/side_by_side.py REF [--rounds 2] [--what memory,extender]

Each round runs the before tree, then the after tree (before / after / before / after ...), each with its own
benchmark scripts and sources (``PYTHONPATH``), on the same machine state: shared machines are noisy, so
only figures taken in one run are compared. ``memory`` is benchmarks/scheduler_memory.py (median pods/s,
batching on and off); ``extender`` is scripts/bench-extender at 100 nodes (our throughput over the Go
reference's, per verb and mode); ``metrics`` is benchmarks/metrics_render.py (ms per /metrics scrape).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEDIAN = re.compile(r"^batching (on|off): best \d+ pods/s, median (\d+) pods/s")
RATIO = re.compile(r"^(\w+ \w+ n=\d+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)")


def run(tree: Path, argv: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), KUBESCHED_PYTHON=sys.executable)
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"side_by_side: {' '.join(argv)} in {tree} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def memory(tree: Path, nodes: int, pods: int) -> dict[str, float]:
    out = run(
        tree,
        [
            sys.executable,
            "benchmarks/scheduler_memory.py",
            "--nodes",
            str(nodes),
            "--pods",
            str(pods),
            "--repeat",
            "3",
            "--batching",
            "both",
        ],
    )
    return {f"memory, batching {m[1]} (median pods/s)": float(m[2]) for m in map(MEDIAN.match, out.splitlines()) if m}


def extender(tree: Path, seconds: int) -> dict[str, float]:
    out = run(tree, ["sh", "scripts/bench-extender", "--nodes", "100", "--seconds", str(seconds)])
    return {f"extender {m[1]} (py/go)": float(m[2]) for m in map(RATIO.match, out.splitlines()) if m}


RENDER = re.compile(r"^metrics render: ([\d.]+) ms per scrape")


def metrics(tree: Path) -> dict[str, float]:
    # The after tree's script over each tree's sources: the script only uses what both trees have.
    out = run(tree, [sys.executable, str(ROOT / "benchmarks" / "metrics_render.py")])
    found = [float(m[1]) for m in map(RENDER.match, out.splitlines()) if m]
    return {"scheduler /metrics render (ms per scrape)": found[0]} if found else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref", help="the git ref measured as 'before' (e.g. a commit or main~3)")
    ap.add_argument("--rounds", type=int, default=2, help="before/after pairs (default 2)")
    ap.add_argument("--what", default="memory,extender", help="benchmarks, comma-separated: memory, extender, metrics")
    ap.add_argument("--nodes", type=int, default=5000, help="memory: nodes (default 5000)")
    ap.add_argument("--pods", type=int, default=10000, help="memory: pods (default 10000)")
    ap.add_argument("--seconds", type=int, default=5, help="extender: length of each wrk run (default 5)")
    a = ap.parse_args()
    what = [w.strip() for w in a.what.split(",") if w.strip()]
    unknown = sorted(set(what) - {"memory", "extender", "metrics"})
    if unknown:
        ap.error(f"--what: unknown benchmark {', '.join(unknown)} (choose from memory, extender, metrics)")
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="kubesched-before-") as tmp:
        before = Path(tmp) / "tree"
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.ref], capture_output=True, check=False)
        if archive.returncode != 0:
            ap.error(f"REF: git archive {a.ref}: {archive.stderr.decode().strip()}")
        before.mkdir()
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        for _ in range(a.rounds):
            for label, tree in (("before", before), ("after", ROOT)):
                for w in what:
                    if w == "memory":
                        got = memory(tree, a.nodes, a.pods)
                    elif w == "metrics":
                        got = metrics(tree)
                    else:
                        got = extender(tree, a.seconds)
                    for row, value in got.items():
                        results.setdefault(row, {"before": [], "after": []})[label].append(value)
    print(f"before: {a.ref}   after: working tree   rounds: {a.rounds} (alternating)")
    print(f"{'benchmark':<44}{'before':>22}{'after':>22}")
    for row, got in results.items():
        b = " / ".join(f"{v:g}" for v in got["before"])
        f = " / ".join(f"{v:g}" for v in got["after"])
        print(f"{row:<44}{b:>22}{f:>22}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
