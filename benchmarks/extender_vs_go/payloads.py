"""Extender payloads for the Go-vs-kubesched benchmark, shaped like a real cloud cluster.

For each node count N, ``write(out, [N, ...])`` (or ``python payloads.py OUT N...``) writes:

  nodes-N.json         a v1 NodeList: the node cache both extenders load (``--nodes``)
  filter-full-N.json   ExtenderArgs carrying whole Node objects (``nodeCacheCapable: false``)
  filter-names-N.json  ExtenderArgs carrying NodeNames only (``nodeCacheCapable: true``)

The same bodies are posted to filter and prioritize. Keys are kube-scheduler's (Go field names:
Pod, Nodes, NodeNames). A node is about 7.5 KB of JSON: labels, annotations, four conditions,
addresses, node info and 15-40 container images. Everything is seeded, so a file is the same on
every run. ``check_cases`` adds small edge-case requests for the answer comparison.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

RESOURCE = "example.com/custom-resource"
STAMP = "2026-11-01T10:00:00Z"
CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def _hex(rng: random.Random, bits: int) -> str:
    return f"{rng.getrandbits(bits):0{bits // 4}x}"


def make_node(i: int, rng: random.Random) -> dict[str, Any]:
    """Node i: ~60 % carry the label `custom`, ~4 % are cordoned, 0-8 units of the resource.

    Node 7 of every hundred is labelled and cordoned, so that even a small cluster reaches every rule.
    """
    marked = i % 100 == 7
    name = f"node-{i:05d}"
    zone = "us-east-1" + "abc"[i % 3]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": rng.choice(("m5.2xlarge", "c5.4xlarge", "r5.xlarge")),
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
        "node-role.kubernetes.io/worker": "",
        "pool": f"pool-{i % 7}",
    }
    if rng.random() < 0.6 or marked:
        labels["custom"] = "true"
    cores = rng.choice((4, 8, 16, 32))
    mem_ki = cores * 4 * 1024 * 1024
    allocatable = {
        "cpu": f"{cores * 1000 - 100}m",
        "memory": f"{mem_ki - 512 * 1024}Ki",
        "ephemeral-storage": "95551679124",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "pods": "110",
        RESOURCE: str(rng.choice((0, 1, 2, 4, 8))),
    }
    capacity = {**allocatable, "cpu": str(cores), "memory": f"{mem_ki}Ki", "ephemeral-storage": "103676Mi"}
    images = []
    for j in range(rng.randint(15, 40)):
        repo = f"registry.example.com/team{j % 9}/app{j}"
        images.append(
            {
                "names": [f"{repo}@sha256:{_hex(rng, 256)}", f"{repo}:v{j}.{i % 5}"],
                "sizeBytes": rng.randint(10_000_000, 900_000_000),
            }
        )
    instance = f"i-{i:017x}"
    spec: dict[str, Any] = {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24", "providerID": f"aws:///{zone}/{instance}"}
    if rng.random() < 0.03 or marked:
        spec["unschedulable"] = True
    if rng.random() < 0.1:
        spec["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    metadata = {
        "name": name,
        "uid": _hex(rng, 128),
        "resourceVersion": str(100000 + i),
        "creationTimestamp": STAMP,
        "labels": labels,
        "annotations": {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": instance}),
        },
    }
    status = {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": [
            {
                "type": t,
                "status": s,
                "lastHeartbeatTime": "2026-11-29T10:00:00Z",
                "lastTransitionTime": STAMP,
                "reason": r,
                "message": m,
            }
            for t, s, r, m in CONDITIONS
        ],
        "addresses": [
            {"type": "InternalIP", "address": f"10.0.{i // 256 % 256}.{i % 256}"},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": _hex(rng, 128),
            "systemUUID": _hex(rng, 128),
            "bootID": _hex(rng, 128),
            "kernelVersion": "6.1.0-27-cloud-amd64",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "containerRuntimeVersion": "containerd://1.7.22",
            "kubeletVersion": "v1.34.2",
            "kubeProxyVersion": "v1.34.2",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
        "images": images,
    }
    return {"metadata": metadata, "spec": spec, "status": status}


def make_pod(containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A pending Deployment pod; by default one container asking for 1 unit of the resource."""
    if containers is None:
        containers = [container({"cpu": "500m", "memory": "512Mi", RESOURCE: "1"}, {RESOURCE: "1"})]
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-7d9f8c6b5",
        "uid": "0a0b0c0d-1111-2222-3333-444455556666",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "metadata": {
            "name": "web-7d9f8c6b5-x2x7q",
            "namespace": "default",
            "uid": "4f1c2a9e-0c55-4a8e-9d3c-2b7e6f0a1d11",
            "labels": {"app": "web", "custom": "true", "pod-template-hash": "7d9f8c6b5"},
            "ownerReferences": [owner],
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "priority": 0,
            "containers": containers,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {
        "name": "c",
        "image": "registry.example.com/team1/app1:v1.0",
        "resources": resources,
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
    }


def node_list(n: int) -> dict[str, Any]:
    rng = random.Random(42)
    items = [make_node(i, rng) for i in range(n)]
    return {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}


def _dump(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, separators=(",", ":")))


def write(out: Path, counts: list[int]) -> None:
    """The node cache and the two benchmark requests for every node count."""
    out.mkdir(parents=True, exist_ok=True)
    for n in counts:
        nodes = node_list(n)
        names = [x["metadata"]["name"] for x in nodes["items"]]
        _dump(out / f"nodes-{n}.json", nodes)
        _dump(out / f"filter-full-{n}.json", {"Pod": make_pod(), "Nodes": nodes, "NodeNames": None})
        _dump(out / f"filter-names-{n}.json", {"Pod": make_pod(), "Nodes": None, "NodeNames": names})


def check_cases(nodes: dict[str, Any]) -> dict[str, bytes]:
    """Extra requests over a node list (the cache) that reach every rule of the policy: compared, not timed."""
    n = len(nodes["items"])
    names = [x["metadata"]["name"] for x in nodes["items"]]
    pods = {
        "limits-only": make_pod([container({"cpu": "1"}, {RESOURCE: "2"})]),
        "two-containers": make_pod([container({RESOURCE: "1"}), container(None, {RESOURCE: "3"})]),
        "request-beats-limit": make_pod([container({RESOURCE: "4"}, {RESOURCE: "8"})]),
        "no-resource": make_pod([container({"cpu": "100m"})]),
        "too-much": make_pod([container({RESOURCE: "9"})]),
    }
    cases: dict[str, bytes] = {}
    for label, pod in pods.items():
        body = {"Pod": pod, "Nodes": None, "NodeNames": names}
        cases[f"names {label}"] = json.dumps(body).encode()
        body = {"Pod": pod, "Nodes": {"items": nodes["items"][: min(n, 40)]}, "NodeNames": None}
        cases[f"full {label}"] = json.dumps(body).encode()
    unknown = ["no-such-node", *names[::2], "node-99999"]
    cases["names with unknown nodes"] = json.dumps({"Pod": make_pod(), "NodeNames": unknown}).encode()
    cases["names empty"] = json.dumps({"Pod": make_pod(), "NodeNames": []}).encode()
    zero = [x["metadata"]["name"] for x in nodes["items"] if x["status"]["allocatable"][RESOURCE] == "0"]
    cases["names all without the resource"] = json.dumps({"Pod": make_pod(), "NodeNames": zero}).encode()
    return cases


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: payloads.py OUT [N ...]  (default N: 100 1000 5000)")
    write(Path(sys.argv[1]), [int(x) for x in sys.argv[2:]] or [100, 1000, 5000])
