"""Seeded random clusters and pods, as manifests to create on a real API server.

One seed gives one `Scenario`: namespaces with labels, PriorityClasses, a RuntimeClass with overhead, nodes
(allocatable with an extended resource, zone/rack/hostname and custom labels, taints of every effect, some
cordoned), pods bound to them (requests by every rule kube-scheduler counts: init and sidecar containers,
overhead, limits only; host ports; some in the middle of an in-place resize, their status larger than their
spec), and pending pods that exercise node selectors, every node-affinity operator, tolerations, host ports,
inter-pod (anti-)affinity with namespaces and namespaceSelector, topology spread (minDomains, the node
policies, matchLabelKeys) and priorities. Every name carries ``prefix``, so scenarios share a cluster.
Volumes and DRA are left out (see docs/scheduler.md, "Differential test").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kubesched.testing.differential.constraints import Constraints
from kubesched.testing.differential.names import APPS, CORES, DISK, GPU, HOST, RACK, TAINT_KEYS, ZONE

PAUSE = "registry.k8s.io/pause:3.10"
PORTS = (8080, 9090)
FINALIZER = "example.com/differential-hold"
# Images with their sizes: nodes report some, pods run them (ImageLocality scores by them).
IMAGES = {
    "registry.example/app-a:1": 300 * 2**20,
    "registry.example/app-b:2": 900 * 2**20,
    "registry.example/tools:3": 40 * 2**20,
    "docker.io/library/nginx:1.27": 190 * 2**20,
}

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Knobs:
    """The sizes of one scenario."""

    nodes: tuple[int, int] = (5, 9)
    bound: tuple[int, int] = (8, 18)
    pending: int = 20
    namespaces: int = 3


@dataclass
class Scenario:
    """What to create, in order: namespaces, classes, nodes (with status), bound pods (with status), then the
    pending pods one at a time."""

    seed: int
    prefix: str
    scheduler_name: str
    namespaces: list[Manifest] = field(default_factory=list)
    priority_classes: list[Manifest] = field(default_factory=list)
    runtime_classes: list[Manifest] = field(default_factory=list)
    nodes: list[tuple[Manifest, Manifest]] = field(default_factory=list)
    bound: list[tuple[Manifest, Manifest]] = field(default_factory=list)
    terminating: list[str] = field(default_factory=list)  # bound pods held by a finalizer, then deleted
    services: list[Manifest] = field(default_factory=list)  # selectors for PodTopologySpread's default spreading
    pdbs: list[tuple[Manifest, Manifest]] = field(default_factory=list)  # with the status no controller writes here
    pending: list[Manifest] = field(default_factory=list)


def started_at(n: int) -> str:
    """The n-th pod's status.startTime: distinct, increasing."""
    return f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"


def generate(seed: int, prefix: str, scheduler_name: str, knobs: Knobs | None = None) -> Scenario:
    """The scenario of ``seed``: the same seed and prefix give the same manifests."""
    return _Gen(random.Random(seed), seed, prefix, scheduler_name, knobs or Knobs()).scenario()


class _Gen:
    def __init__(self, rng: random.Random, seed: int, prefix: str, scheduler: str, knobs: Knobs) -> None:
        self.r, self.prefix, self.knobs = rng, prefix, knobs
        self.out = Scenario(seed, prefix, scheduler)
        self.ns_names: list[str] = []
        self.ns_labels: dict[str, dict[str, str]] = {}
        self.node_names: list[str] = []
        self.classes: list[str] = []
        self.c = Constraints(rng, prefix, self.node_names, self.ns_names)  # fills as the lists do
        self.count = 0

    def scenario(self) -> Scenario:
        self.namespaces()
        self.priority_classes()
        self.out.runtime_classes.append(
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": f"{self.prefix}-rc"},
                "handler": "runc",
                "overhead": {"podFixed": {"cpu": "100m", "memory": "64Mi"}},
            }
        )
        for i in range(self.r.randint(*self.knobs.nodes)):
            self.out.nodes.append(self.node(i))
        for _ in range(self.r.randint(*self.knobs.bound)):
            self.out.bound.append(self.bound_pod())
            if self.r.random() < 0.08:
                self.out.bound[-1][0]["metadata"]["finalizers"] = [FINALIZER]
                self.out.terminating.append(self.out.bound[-1][0]["metadata"]["name"])
        for ns in self.ns_names:
            if self.r.random() < 0.5:
                self.out.pdbs.append(self.pdb(ns))
            if self.r.random() < 0.5:
                self.out.services.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "metadata": {"name": f"{ns}-svc", "namespace": ns},
                        "spec": {"selector": {"app": self.r.choice(APPS)}, "ports": [{"port": 80}]},
                    }
                )
        self.out.pending = [self.pending_pod() for _ in range(self.knobs.pending)]
        return self.out

    # ---- cluster ------------------------------------------------------------------------------------

    def namespaces(self) -> None:
        for i in range(self.knobs.namespaces):
            name = f"{self.prefix}-ns{i}"
            labels = {"team": self.r.choice(("a", "b")), f"{self.prefix}-diff": "yes"}
            if self.r.random() < 0.5:
                labels["env"] = self.r.choice(("prod", "dev"))
            self.ns_names.append(name)
            self.ns_labels[name] = labels
            self.out.namespaces.append(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
            )

    def priority_classes(self) -> None:
        for name, value, policy in (("low", 10, None), ("high", 1000, None), ("high-never", 1000, "Never")):
            full = f"{self.prefix}-{name}"
            pc: Manifest = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": full},
                "value": value,
            }
            if policy:
                pc["preemptionPolicy"] = policy
            self.classes.append(full)
            self.out.priority_classes.append(pc)

    def node(self, i: int) -> tuple[Manifest, Manifest]:
        r = self.r
        name = f"{self.prefix}-n{i}"
        self.node_names.append(name)
        labels = {HOST: name, f"{self.prefix}-diff": "yes", CORES: r.choice(("4", "8", "16"))}
        if r.random() < 0.85:
            labels[ZONE] = r.choice(("z1", "z2", "z3"))
        if r.random() < 0.7:
            labels[RACK] = r.choice(("r1", "r2"))
        if r.random() < 0.6:
            labels[DISK] = r.choice(("ssd", "hdd"))
        taints = []
        if r.random() < 0.3:
            key = r.choice(TAINT_KEYS)
            taint = {"key": key, "effect": r.choice(("NoSchedule", "NoExecute", "PreferNoSchedule"))}
            if r.random() < 0.7:
                taint["value"] = r.choice(("x", "y"))
            taints.append(taint)
        spec: Manifest = {}
        if taints:
            spec["taints"] = taints
        if r.random() < 0.1:
            spec["unschedulable"] = True
        # Every quantity format the API accepts: milli, decimal, binary and decimal SI, plain bytes.
        alloc = {
            "cpu": r.choice(("1", "2", "4", "3500m", "2.5", "8")),
            "memory": r.choice(("2Gi", "4Gi", "8Gi", "4G", "3500Mi", "6000000Ki", "3000000000", "16Gi")),
            "pods": str(r.choice((4, 8, 110))),
        }
        if r.random() < 0.4:
            alloc[GPU] = str(r.choice((1, 2, 4)))
        if r.random() < 0.5:
            alloc["ephemeral-storage"] = r.choice(("10Gi", "20G", "5Gi"))
        status: Manifest = {"allocatable": alloc, "capacity": dict(alloc)}
        if r.random() < 0.6:
            images = r.sample(sorted(IMAGES), r.randint(1, 3))
            status["images"] = [{"names": [image], "sizeBytes": IMAGES[image]} for image in images]
        manifest = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec}
        return manifest, {"status": status}

    def pdb(self, ns: str) -> tuple[Manifest, Manifest]:
        allowed = self.r.randint(0, 1)
        manifest = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"{ns}-pdb", "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": self.r.choice(APPS)}}, "maxUnavailable": 1},
        }
        status = {"currentHealthy": 2, "desiredHealthy": 2 - allowed, "expectedPods": 2, "disruptionsAllowed": allowed}
        return manifest, {"status": {**status, "observedGeneration": 1}}

    # ---- pods ---------------------------------------------------------------------------------------

    def _resources(self, small: bool = False) -> Manifest:
        r = self.r
        cpu = r.choice(("50m", "0.1", "250m", "500m") if small else ("100m", "0.3", "500m", "1", "1500m", "1.2"))
        mem = r.choice(("64Mi", "100M", "256Mi") if small else ("128Mi", "500M", "1Gi", "1.5Gi", "268435456", "2Gi"))
        req: dict[str, str] = {}
        if r.random() < 0.9:
            req["cpu"] = cpu
        if r.random() < 0.8:
            req["memory"] = mem
        if r.random() < 0.1:
            req["ephemeral-storage"] = r.choice(("1Gi", "4G", "12Gi"))
        shape = r.random()
        if shape < 0.15:  # limits only: the API server copies them to requests
            return {"limits": req} if req else {}
        if shape < 0.3 and req:
            return {"requests": req, "limits": dict(req)}
        return {"requests": req} if req else {}

    def _container(self, name: str, small: bool = False, port: bool = False) -> Manifest:
        c: Manifest = {"name": name, "image": self.r.choice(sorted(IMAGES)) if self.r.random() < 0.6 else PAUSE}
        res = self._resources(small)
        if self.r.random() < 0.12 and not small:
            res.setdefault("requests", {})[GPU] = "1"
            res.setdefault("limits", {})[GPU] = "1"
        if res:
            c["resources"] = res
        if port:
            p: Manifest = {"containerPort": 80, "hostPort": self.r.choice(PORTS)}
            if self.r.random() < 0.3:
                p["protocol"] = "UDP"
            if self.r.random() < 0.2:
                p["hostIP"] = "127.0.0.1"
            c["ports"] = [p]
        return c

    def _labels(self) -> dict[str, str]:
        labels = {"app": self.r.choice(APPS)}
        if self.r.random() < 0.5:
            labels["tier"] = self.r.choice(("fe", "be"))
        if self.r.random() < 0.4:
            labels["version"] = self.r.choice(("v1", "v2"))
        return labels

    def _pod(self, kind: str) -> Manifest:
        r = self.r
        self.count += 1
        spec: Manifest = {
            "schedulerName": self.out.scheduler_name,
            "containers": [self._container("c0", port=r.random() < 0.15)],
        }
        if r.random() < 0.3:
            spec["containers"].append(self._container("c1", small=True))
        if r.random() < 0.3:
            inits = [self._container(f"init{i}", small=r.random() < 0.5) for i in range(r.randint(1, 2))]
            if r.random() < 0.5:  # a sidecar: counted with the containers, and with the inits after it
                side = self._container("side", small=r.random() < 0.7)
                side["restartPolicy"] = "Always"
                inits.insert(r.randint(0, len(inits)), side)
            spec["initContainers"] = inits
        if r.random() < 0.05:  # pod-level resources (PodLevelResources, on by default since v1.34)
            spec["resources"] = {
                "requests": {"cpu": r.choice(("4", "5")), "memory": r.choice(("5Gi", "6Gi"))}
            }  # >= containers
        if r.random() < 0.15:
            spec["runtimeClassName"] = f"{self.prefix}-rc"
        if r.random() < 0.05:  # host network: the API server sets each port's hostPort to its containerPort
            spec["hostNetwork"] = True
            spec["containers"][0]["ports"] = [{"containerPort": self.r.choice(PORTS)}]
        if r.random() < 0.5:
            spec["priorityClassName"] = r.choice(self.classes)
        meta = {
            "name": f"{self.prefix}-{kind}{self.count}",
            "namespace": r.choice(self.ns_names),
            "labels": self._labels(),
        }
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def bound_pod(self) -> tuple[Manifest, Manifest]:
        pod = self._pod("b")
        pod["spec"]["nodeName"] = self.r.choice(self.node_names)
        status = self._resize_status(pod) if self.r.random() < 0.25 else {"status": {"phase": "Running"}}
        # Started in creation order, as a kubelet reports it: preemption orders victims of one priority by it.
        status["status"]["startTime"] = started_at(self.count)
        return pod, status

    def _resize_status(self, pod: Manifest) -> Manifest:
        """A status as the kubelet writes it during an in-place resize: the container larger (or smaller)
        than its spec in ``resources`` (actuated) and ``allocatedResources``; sometimes Infeasible."""
        r = self.r
        statuses = []
        for c in pod["spec"]["containers"]:
            bigger = {"cpu": r.choice(("200m", "700m", "1200m")), "memory": r.choice(("256Mi", "1Gi", "1536Mi"))}
            alloc = bigger if r.random() < 0.5 else {"cpu": r.choice(("100m", "900m")), "memory": "512Mi"}
            statuses.append(
                {
                    "name": c["name"],
                    "image": PAUSE,
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    "allocatedResources": alloc,
                    "resources": {"requests": bigger},
                }
            )
        status: Manifest = {"phase": "Running", "containerStatuses": statuses}
        if r.random() < 0.3:
            status["conditions"] = [
                {"type": "PodResizePending", "status": "True", "reason": "Infeasible", "message": "too big"}
            ]
        return {"status": status}

    def pending_pod(self) -> Manifest:
        r = self.r
        pod = self._pod("p")
        spec = pod["spec"]
        if r.random() < 0.25:
            spec["nodeSelector"] = self.c.node_selector()
        affinity: Manifest = {}
        if r.random() < 0.35:
            affinity["nodeAffinity"] = self.c.node_affinity()
        if r.random() < 0.3:
            affinity["podAffinity"] = self.c.pod_affinity(pod)
        if r.random() < 0.3:
            affinity["podAntiAffinity"] = self.c.pod_affinity(pod)
        if affinity:
            spec["affinity"] = affinity
        if r.random() < 0.4:
            spec["tolerations"] = [self.c.toleration() for _ in range(r.randint(1, 2))]
        if r.random() < 0.35:
            constraints: dict[tuple[str, str], Manifest] = {}
            for _ in range(r.randint(1, 2)):  # the API allows one per topologyKey and whenUnsatisfiable
                c = self.c.spread(pod)
                constraints.setdefault((c["topologyKey"], c["whenUnsatisfiable"]), c)
            spec["topologySpreadConstraints"] = list(constraints.values())
        return pod
