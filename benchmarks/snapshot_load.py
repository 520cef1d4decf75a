"""Benchmark: a large `kubesched snapshot` file, written by the snapshot's own writer, then read back as
`scheduler run --cluster` reads it (issue 20 item 8: 15,000 nodes load in under 10 s).

Run: .venv/bin/python benchmarks/snapshot_load.py [--nodes 15000] [--yaml-nodes 1500] [--pods-per-node 10]
         [--images 20] [--repeat 3] [--formats json,yaml]
JSON is measured at --nodes; YAML at --yaml-nodes (a YAML snapshot is held to 30,000 objects: see
docs/scheduler.md).
Nodes look like real ones after stripping: 10 labels, capacity and allocatable, ``--images`` images of two
names each (ImageLocality reads them), a taint on every tenth; bound pods with two containers, requests,
limits, owner references, tolerations. Prints the file size, write time and load times (median of repeats).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.files import read_cluster
from kubesched.cluster.snapshot import Snapshot, write_atomically


def node(i: int, images: int) -> dict[str, Any]:
    zone = f"zone-{i % 3}"
    return {
        "metadata": {
            "name": f"node-{i}",
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "labels": {
                "kubernetes.io/hostname": f"node-{i}",
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "region-1",
                "failure-domain.beta.kubernetes.io/zone": zone,
                "node.kubernetes.io/instance-type": "m5.4xlarge",
                "pool": f"pool-{i % 7}",
            },
        },
        "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]} if i % 10 == 0 else {},
        "status": {
            "capacity": {"cpu": "16", "memory": "65843380Ki", "pods": "110", "ephemeral-storage": "101430960Ki"},
            "allocatable": {"cpu": "15890m", "memory": "64692404Ki", "pods": "110", "ephemeral-storage": "93478772582"},
            "images": [
                {
                    "names": [
                        f"registry.example.com/team-{j % 9}/app-{j}@sha256:{j:064x}",
                        f"registry.example.com/team-{j % 9}/app-{j}:v1.{j}.0",
                    ],
                    "sizeBytes": 50_000_000 + j * 1_000_003,
                }
                for j in range((i % 5) * 3, (i % 5) * 3 + images)
            ],
        },
    }


def pod(i: int, node_name: str) -> dict[str, Any]:
    app = f"app-{i % 200}"
    container = {
        "name": "main",
        "image": f"registry.example.com/team-{i % 9}/{app}:v1.{i % 20}.0",
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
    }
    return {
        "metadata": {
            "name": f"{app}-{i:08x}",
            "namespace": f"ns-{i % 40}",
            "uid": f"10000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(100_000 + i),
            "labels": {"app": app, "pod-template-hash": f"{i % 200:08x}"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-rs",
                    "uid": f"rs-{i % 200}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "containers": [container, {**container, "name": "sidecar", "ports": None}],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        },
        "status": {"phase": "Running", "startTime": "2026-12-01T00:00:00Z"},
    }


def snapshot(nodes: int, pods_per_node: int, images: int) -> Snapshot:
    objects = {
        "Node": [msgspec.convert(node(i, images), Node) for i in range(nodes)],
        "Pod": [msgspec.convert(pod(i, f"node-{i % nodes}"), Pod) for i in range(nodes * pods_per_node)],
    }
    return Snapshot("https://bench.example", objects)


def verdict(nodes: int, seconds: float) -> str:
    if nodes < 15000:
        return "(smaller cluster)"
    return "met" if seconds < 10 else "not met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=15000)
    parser.add_argument("--yaml-nodes", type=int, default=1500)
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formats", default="json,yaml", help="json, yaml or both (the file's suffix chooses)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            n = args.nodes if fmt == "json" else args.yaml_nodes
            doc = snapshot(n, args.pods_per_node, args.images).documents()
            path = Path(tmp) / f"cluster.{fmt}"
            start = time.perf_counter()
            write_atomically(path, doc)
            written = time.perf_counter() - start
            del doc
            loads = []
            for _ in range(args.repeat):
                gc.collect()
                start = time.perf_counter()
                got = read_cluster(path)
                loads.append(time.perf_counter() - start)
                assert len(got.nodes) == n and len(got.pods) == n * args.pods_per_node
                del got
            rows.append((fmt, n, path.stat().st_size, written, loads))
            path.unlink()
    print(f"| format | nodes | bound pods | file | write s | load s (median of {args.repeat}) | target < 10 s |")
    print("|---|---|---|---|---|---|---|")
    for fmt, n, size, written, loads in rows:
        median = statistics.median(loads)
        print(
            f"| {fmt} | {n:,} | {n * args.pods_per_node:,} | {size / 2**20:.0f} MiB | {written:.1f} | {median:.1f}"
            f" (min {min(loads):.1f}, max {max(loads):.1f}) | {verdict(n, median)} |"
        )


if __name__ == "__main__":
    main()
