"""kube-scheduler's own benchmark workloads (test/integration/scheduler_perf) through kubesched in memory.

Run: .venv/bin/python benchmarks/scheduler_perf.py [WORKLOAD ...] [--batching on|off|both] [--scale F]
     [--before REF] [--config-dir DIR]

A WORKLOAD is ``TestCase/workload`` as upstream names them (default: the inter-pod affinity performance
workloads, see AFFINITY). The test cases are read from kube-scheduler v1.37.2's own
``performance-config.yaml`` files and templates, in the Go module cache the control-plane harness fills
(``make build-control-plane``). Their ops are replayed as scheduler_perf does: nodes from the node template
(named, with the ``kubernetes.io/hostname`` label, and ``labelNodePrepareStrategy``'s label), namespaces
(with the template's labels), then each createPods op's pods scheduled to completion before the next; the
pods of the op with ``collectMetrics`` are the measured ones (pods/s over them, as upstream's
SchedulingThroughput averages). ``--scale`` multiplies every count parameter (nodes and pods) for runs that
would take too long on a small machine. ``--before REF`` also runs the same workloads with the sources of
git ref REF (this script, that tree's ``src``), alternating, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import yaml

ROOT = Path(__file__).resolve().parent.parent
AFFINITY = (
    "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
    "SchedulingPodMatchingAntiAffinity/5000Nodes_5000Pods",
    "SchedulingPodAffinity/5000Nodes_5000Pods",
    "SchedulingPreferredPodAffinity/5000Nodes_5000Pods",
    "SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods",
    "MixedSchedulingBasePod/5000Nodes_5000Pods",
    "SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes_2000Pods",
    "SchedulingPreferredAntiAffinityWithNSSelector/5000Nodes_2000Pods",
    "SchedulingRequiredPodAffinityWithNSSelector/5000Nodes_2000Pods",
)


def default_config_dir() -> Path:
    from kubesched.testing.build import cache_root

    return cache_root() / "gomod" / "k8s.io" / "kubernetes@v1.37.2" / "test" / "integration" / "scheduler_perf"


def find_case(config_dir: Path, name: str) -> tuple[dict[str, Any], dict[str, Any], Path]:
    case_name, _, workload_name = name.partition("/")
    for path in sorted(config_dir.rglob("performance-config.yaml")):
        for case in yaml.safe_load(path.read_text()) or ():
            if case.get("name") == case_name:
                for w in case.get("workloads", ()):
                    if w.get("name") == workload_name:
                        return case, w, path.parent
                raise SystemExit(f"scheduler_perf: {case_name} has no workload {workload_name!r}")
    raise SystemExit(f"scheduler_perf: no test case {case_name!r} under {config_dir}")


def count(op: dict[str, Any], params: dict[str, Any], scale: float) -> int:
    raw = op.get("count", params.get(str(op.get("countParam", "")).lstrip("$"), 0))
    return max(1, round(int(raw) * scale)) if raw else 0


def load(base: Path, rel: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((base / rel).read_text())
    return doc


def plan(name: str, config_dir: Path, scale: float) -> dict[str, Any]:
    """Nodes, namespaces and the stages of pods (the last measured) of one workload, as JSON-able objects."""
    case, workload, base = find_case(config_dir, name)
    params = workload.get("params", {})
    nodes: list[dict[str, Any]] = []
    namespaces: list[dict[str, Any]] = []
    stages: list[tuple[list[dict[str, Any]], bool]] = []

    def pods(op: dict[str, Any], namespace: str, index: int) -> None:
        template = load(base, op.get("podTemplatePath", case["defaultPodTemplatePath"]))
        meta = template.setdefault("metadata", {})
        prefix = meta.pop("generateName", "pod-")
        made = []
        for i in range(count(op, params, scale)):
            name = f"{prefix}{index}-{i}"
            made.append(
                {**template, "metadata": {**meta, "name": name, "namespace": namespace, "uid": f"{namespace}/{name}"}}
            )
        stages.append((made, bool(op.get("collectMetrics"))))

    for index, op in enumerate(case["workloadTemplate"]):
        code = op["opcode"]
        if code == "createNodes":
            template = load(base, op["nodeTemplatePath"]) if "nodeTemplatePath" in op else {"status": {}}
            strategy = op.get("labelNodePrepareStrategy")
            for i in range(count(op, params, scale)):
                name = f"scheduler-perf-{len(nodes)}"
                labels = {**template.get("metadata", {}).get("labels", {}), "kubernetes.io/hostname": name}
                if strategy:
                    values = strategy["labelValues"]
                    labels[strategy["labelKey"]] = values[i % len(values)]
                status = template.get("status") or {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"}}
                status = {**status, "allocatable": status.get("allocatable", status.get("capacity", {}))}
                nodes.append(
                    {"metadata": {"name": name, "labels": labels}, "spec": template.get("spec") or {}, "status": status}
                )
        elif code == "createNamespaces":
            labels = (
                load(base, op["namespaceTemplatePath"]).get("metadata", {}).get("labels", {})
                if "namespaceTemplatePath" in op
                else {}
            )
            n = op.get("count") or params[op["countParam"].lstrip("$")]
            namespaces += [{"metadata": {"name": f"{op['prefix']}-{i}", "labels": labels}} for i in range(int(n))]
        elif code == "createPods":
            pods(op, op.get("namespace", f"namespace-{index}"), index)
        elif code == "createPodSets":
            n = op.get("count") or params[op["countParam"].lstrip("$")]
            for i in range(int(n)):
                pods(op["createPodsOp"], f"{op['namespacePrefix']}-{i}", index * 1000 + i)
        elif code != "barrier":
            raise SystemExit(f"scheduler_perf: {name}: opcode {code!r} is not supported by this runner")
    return {"nodes": nodes, "namespaces": namespaces, "stages": stages, "threshold": workload.get("threshold")}


async def run(spec: dict[str, Any], batching: bool) -> dict[str, Any]:
    from kubesched.api.core import Namespace, Node, Pod
    from kubesched.cluster.cache import ClusterCache
    from kubesched.scheduler.engine.queue import ManualClock
    from kubesched.scheduler.engine.scheduler import Scheduler
    from kubesched.scheduler.memory import MemoryCluster, normalize, run_until_settled
    from kubesched.scheduler.profiles.manager import build_default

    nodes = [msgspec.convert(n, Node) for n in spec["nodes"]]
    namespaces = [msgspec.convert(n, Namespace) for n in spec["namespaces"]]
    clock = ManualClock()
    cluster = MemoryCluster(nodes, [], namespaces=namespaces)
    scheduler = Scheduler(ClusterCache(), cluster, build_default, clock=clock, batching=batching)
    cluster.attach(scheduler)
    out: dict[str, Any] = {"init_s": 0.0, "measured": 0, "bound": 0, "wall_s": 0.0, "cpu_s": 0.0}
    for stage, measured in spec["stages"]:
        pods = normalize([msgspec.convert(p, Pod) for p in stage])
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        for p in pods:
            cluster.pods[p.metadata.uid] = p
            scheduler.pod_upserted(p)
        await run_until_settled(scheduler, clock)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if measured:
            out["measured"] += len(pods)
            out["bound"] += sum(1 for p in pods if cluster.pods[p.metadata.uid].spec.node_name)
            out["wall_s"] += wall
            out["cpu_s"] += cpu
        else:
            out["init_s"] += wall
    return out


def one(argv: list[str]) -> None:
    """Child mode: one workload, one batching mode, printed as JSON (the parent picks the sources)."""
    name, batching, scale, config_dir = argv[0], argv[1] == "on", float(argv[2]), Path(argv[3])
    spec = plan(name, config_dir, scale)
    got = asyncio.run(run(spec, batching))
    print(json.dumps({**got, "threshold": spec["threshold"], "nodes": len(spec["nodes"])}))


def child(src: Path, name: str, mode: str, scale: float, config_dir: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src))
    argv = [sys.executable, __file__, "--one", name, mode, str(scale), str(config_dir)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scheduler_perf: {name} ({mode}, {src}) failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "workloads", nargs="*", default=list(AFFINITY), help="TestCase/workload (default: the affinity set)"
    )
    ap.add_argument("--batching", choices=("on", "off", "both"), default="both")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every node and pod count (default 1)")
    ap.add_argument("--before", metavar="REF", help="also run git ref REF's sources, alternating")
    ap.add_argument("--config-dir", type=Path, default=None, help="scheduler_perf directory of kubernetes v1.37.2")
    a = ap.parse_args()
    config_dir = a.config_dir or default_config_dir()
    if not config_dir.is_dir():
        ap.error(
            f"--config-dir: {config_dir} is not a directory"
            " (run `make build-control-plane` to fill the Go module cache)"
        )
    modes = ["on", "off"] if a.batching == "both" else [a.batching]
    with tempfile.TemporaryDirectory(prefix="kubesched-before-") as tmp:
        trees = [("after", ROOT / "src")]
        if a.before:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", a.before, "src"], capture_output=True, check=False
            )
            if archive.returncode != 0:
                ap.error(f"--before: git archive {a.before}: {archive.stderr.decode().strip()}")
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            trees.insert(0, ("before", Path(tmp) / "src"))
        print(
            f"scale {a.scale:g}; pods/s over the measured pods; before: {a.before or '-'}, after: working tree",
            flush=True,
        )
        head = ("tree", 7), ("batch", 6), ("nodes", 6), ("placed", 12), ("init s", 8), ("pods/s", 8)
        columns = "".join(f"{h:>{w}}" for h, w in (*head, ("CPU ms/pod", 11), ("threshold", 10)))
        print(f"{'workload':<66}{columns}", flush=True)
        for name in a.workloads:
            for mode in modes:
                for label, src in trees:
                    r = child(src, name, mode, a.scale, config_dir)
                    rate = r["bound"] / r["wall_s"] if r["wall_s"] else 0.0
                    placed = f"{r['bound']}/{r['measured']}"
                    cpu = 1000 * r["cpu_s"] / max(r["measured"], 1)
                    line = f"{name:<66}{label:>7}{mode:>6}{r['nodes']:>6}{placed:>12}{r['init_s']:>8.1f}{rate:>8.0f}"
                    print(f"{line}{cpu:>11.2f}{r['threshold'] or '-':>10}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
