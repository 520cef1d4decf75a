"""Side by side: kubesched's extender against the Go reference extender (goext/), same policy.

Usage: python run.py [--nodes 100,1000,5000] [--seconds 5] [--cmd TEMPLATE]
(scripts/bench-extender and `make bench` run this with the repository's virtualenv.)

For each node count: write the payloads (payloads.py), start both extenders on the node cache,
check that every answer on every payload and edge case is the same, then time each payload and
verb with one connection (`wrk -c1 -t1`: kube-scheduler calls an extender one request at a time),
alternating Go and kubesched runs (A B A B). The servers run on CPU 0 and wrk on CPU 1 (taskset).
TEMPLATE (or $KUBESCHED_EXTENDER_CMD) starts our extender instead of the default
`<this python> -m kubesched extender serve --policy custom-label ...`; {nodes} and {listen} are
filled in. Exits 1 if any answer differs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import payloads
import reference
from reference import BenchError, Server

from kubesched.testing.process import free_port

# case, go req/s, py req/s, py/go, go p50, py p50, go p99, py p99 (ms), same answers
Row = tuple[str, float, float, float, float, float, float, float, bool]

HEADER = (
    f"{'case':<28}{'go req/s':>10}{'py req/s':>10}{'py/go':>7}"
    f"{'go p50':>9}{'py p50':>9}{'go p99':>9}{'py p99':>9}  same"
)


def ensure_tools() -> None:
    """wrk and taskset on PATH; wrk is installed from the Debian package when it is missing."""
    if shutil.which("wrk") is None:
        if shutil.which("apt-get") is None:
            raise BenchError("wrk is not installed and there is no apt-get to install it (package `wrk`)")
        print("installing wrk (Debian package)", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, stdout=subprocess.DEVNULL)
    if shutil.which("taskset") is None:
        raise BenchError("taskset is not installed (package `util-linux`)")
    if (os.cpu_count() or 1) < 2:
        raise BenchError("needs 2 CPUs: the servers run on CPU 0, wrk on CPU 1")


def _ms(out: str, pct: str) -> float:
    m = re.search(pct + r"%\s+([\d.]+)(us|ms|s)\b", out)
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)] if m else float("nan")


def wrk(port: int, verb: str, body: Path, seconds: int) -> tuple[float, float, float]:
    """Requests/s, p50 and p99 in ms of one wrk run with one connection."""
    argv = ["taskset", "-c", "1", "wrk", "-t1", "-c1", f"-d{seconds}s", "--latency", "--timeout", "60s"]
    argv += ["-s", str(reference.HERE / "post.lua"), f"http://127.0.0.1:{port}/{verb}"]
    proc = subprocess.run(argv, env=dict(os.environ, BODY=str(body)), capture_output=True, text=True)
    found = re.search(r"Requests/sec:\s+([\d.]+)", proc.stdout)
    if proc.returncode != 0 or found is None:
        raise BenchError(f"wrk failed (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", proc.stdout)
    if errors:
        raise BenchError(f"{verb} on port {port}: {errors.group(1)} error replies during the timed run")
    return float(found.group(1)), _ms(proc.stdout, "50"), _ms(proc.stdout, "99")


def bench_count(n: int, work: Path, binary: Path, seconds: int, template: str | None) -> tuple[list[Row], int]:
    """Check and time one node count; the table rows and the number of differing answers."""
    nodes_file = work / f"nodes-{n}.json"
    go_port, py_port = free_port(), free_port()
    pin = ["taskset", "-c", "0"]
    go = Server(
        "the Go reference",
        pin + reference.go_command(binary, nodes_file, f"127.0.0.1:{go_port}"),
        go_port,
        work / f"go-{n}.log",
        env=dict(os.environ, GOMAXPROCS="1"),
    )
    py = Server(
        "kubesched",
        pin + reference.python_command(nodes_file, f"127.0.0.1:{py_port}", template),
        py_port,
        work / f"kubesched-{n}.log",
    )
    rows: list[Row] = []
    try:
        probe = (work / f"filter-names-{n}.json").read_bytes()
        go.wait_ready(probe)
        py.wait_ready(probe)
        bodies = {kind: work / f"filter-{kind}-{n}.json" for kind in ("names", "full")}
        cases = {f"{kind} n={n}": path.read_bytes() for kind, path in bodies.items()}
        extra = payloads.check_cases(payloads.node_list(n))
        cases.update({f"{label} n={n}": body for label, body in extra.items()})
        diffs = reference.differences(go_port, py_port, cases)
        for line in diffs:
            print(f"MISMATCH {line}", file=sys.stderr)
        for kind, path in bodies.items():
            secs = seconds * (3 if kind == "full" and n >= 5000 else 1)  # few requests per run otherwise
            for verb in reference.VERBS:
                runs = [wrk(port, verb, path, secs) for port in (go_port, py_port, go_port, py_port)]
                g = [statistics.mean(x) for x in zip(runs[0], runs[2], strict=True)]
                p = [statistics.mean(x) for x in zip(runs[1], runs[3], strict=True)]
                same = not any(d.startswith(f"{verb} {kind} n={n}:") for d in diffs)
                rows.append((f"{verb} {kind} n={n}", g[0], p[0], p[0] / g[0], g[1], p[1], g[2], p[2], same))
    finally:
        go.stop()
        py.stop()
    return rows, len(diffs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="100,1000,5000", help="node counts, comma-separated")
    ap.add_argument("--seconds", type=int, default=5, help="length of each wrk run")
    ap.add_argument("--cmd", default=os.environ.get("KUBESCHED_EXTENDER_CMD"), help="command template of ours")
    a = ap.parse_args()
    try:
        counts = [int(x) for x in a.nodes.split(",")]
    except ValueError:
        ap.error(f"--nodes: {a.nodes!r} is not a comma-separated list of integers")
    try:
        ensure_tools()
        binary = reference.build_go()
        rows: list[Row] = []
        mismatches = 0
        with tempfile.TemporaryDirectory(prefix="extbench-") as tmp:
            work = Path(tmp)
            payloads.write(work, counts)
            for n in counts:
                got, bad = bench_count(n, work, binary, a.seconds, a.cmd)
                rows += got
                mismatches += bad
    except BenchError as err:
        print(f"bench: {err}", file=sys.stderr)
        return 2
    print(HEADER)
    for r in rows:
        print(
            f"{r[0]:<28}{r[1]:>10.1f}{r[2]:>10.1f}{r[3]:>7.2f}"
            f"{r[4]:>8.2f}m{r[5]:>8.2f}m{r[6]:>8.2f}m{r[7]:>8.2f}m  {'yes' if r[8] else 'NO'}"
        )
    print(f"answers differing from the Go reference: {mismatches}")
    print(f"worst project/Go throughput ratio: {min(r[3] for r in rows):.2f}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
