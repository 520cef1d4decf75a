"""Run scenarios through kube-scheduler on a `ControlPlane` and through a decider, pod by pod, and compare.

For each seed the scenario's objects are created (bound pods with ``spec.nodeName``, their resize status
through ``pods/status``); then each pending pod, one at a time:

1. created with a scheduling gate, so nobody schedules it yet;
2. the cluster is listed (nodes, unfinished pods, namespaces) and the decider (kubesched) decides the pod
   on that snapshot, the gate stripped: where it goes, or its nomination and FailedScheduling message, every
   node that passes Filter and the best-scored ones;
3. the gate is removed and kube-scheduler (one profile, percentageOfNodesToScore 100, the pass-through
   extender) decides: bound, or PodScheduled=False with its message; a nominated pod (preemption) is waited
   for until bound, its victims gone;
4. a bound pod stays (the cluster evolves as kube-scheduler placed it); an unschedulable one is deleted.

The comparison: outcome (bound / nominated / unschedulable), message, the feasible set (the extender's
first call, exactly), placement (kube-scheduler's node among the decider's best-scored nodes; the very same
node as a figure: ties are random on both sides, kube-scheduler's because of the extender's scores).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesched.cluster.kubeclient import APIError
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.differential.extender import PassThroughExtender
from kubesched.testing.differential.generate import Knobs, Scenario, generate, started_at
from kubesched.testing.differential.known import KNOWN, KnownDifference

GATE = "example.com/differential-hold"
Objects = Sequence[Mapping[str, Any]]


class Decided(Protocol):
    """What a decider answers (`kubesched.scheduler.memory.Decision`)."""

    @property
    def node(self) -> str | None: ...
    @property
    def nominated(self) -> str | None: ...
    @property
    def message(self) -> str: ...
    @property
    def feasible(self) -> tuple[str, ...]: ...
    @property
    def best(self) -> tuple[str, ...]: ...
    @property
    def victims(self) -> tuple[str, ...]: ...


# (scheduler name, {"nodes": [...], "pods": [...], "namespaces": [...], "services": [...]}) -> the answer
Decider = Callable[[str, Mapping[str, Objects]], Decided]


@dataclass(frozen=True)
class Answer:
    """One scheduler's answer for one pod."""

    outcome: str  # bound | nominated | unschedulable
    node: str | None
    nominated: str | None
    message: str
    feasible: tuple[str, ...]
    best: tuple[str, ...] = ()
    victims: tuple[str, ...] = ()


@dataclass
class Case:
    """One pending pod, both answers, the fields they differ in and the known differences that explain it."""

    seed: int
    pod: str
    manifest: dict[str, Any]
    kube: Answer
    ours: Answer
    differences: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    full_nodes: bool = False  # the extender got (and returned) whole nodes: nodeCacheCapable false

    @property
    def unexplained(self) -> bool:
        return bool(self.differences) and not self.known

    def describe(self) -> str:
        return (
            f"seed {self.seed} pod {self.pod}: differ in {', '.join(self.differences)}"
            f" (known: {', '.join(self.known) or 'none'})\n"
            f"  kube-scheduler: {self.kube}\n  kubesched:      {self.ours}\n"
            f"  pod: {json.dumps(self.manifest['spec'], sort_keys=True)}"
            f"\n  labels: {self.manifest['metadata'].get('labels')} namespace: {self.manifest['metadata']['namespace']}"
        )


def compare(kube: Answer, ours: Answer) -> list[str]:
    """The fields two answers differ in: outcome, message, feasible, placement (kube-scheduler's node not among
    our best-scored), and for two preemptions the nomination and the victims."""
    out = []
    if kube.outcome != ours.outcome:
        out.append("outcome")
    if kube.outcome != "bound" and ours.outcome != "bound" and kube.message != ours.message:
        out.append("message")
    if set(kube.feasible) != set(ours.feasible):
        out.append("feasible")
    if kube.outcome == ours.outcome == "bound" and kube.node not in ours.best:
        out.append("placement")
    if kube.outcome == ours.outcome == "nominated":
        if kube.nominated != ours.nominated:
            out.append("nomination")
        if kube.victims != ours.victims:
            out.append("victims")
    return out


@dataclass
class Report:
    """Every case of a run, with the figures."""

    cases: list[Case] = field(default_factory=list)

    def figures(self) -> dict[str, tuple[int, int]]:
        """Name -> (agreeing, out of)."""
        c = self.cases
        both_bound = [x for x in c if x.kube.outcome == x.ours.outcome == "bound"]
        both_failed = [x for x in c if x.kube.outcome != "bound" and x.ours.outcome != "bound"]
        both_nominated = [x for x in c if x.kube.outcome == x.ours.outcome == "nominated"]
        return {
            "pods": (len(c), len(c)),
            "outcome": (sum(x.kube.outcome == x.ours.outcome for x in c), len(c)),
            "feasible set": (sum(set(x.kube.feasible) == set(x.ours.feasible) for x in c), len(c)),
            "message": (sum(x.kube.message == x.ours.message for x in both_failed), len(both_failed)),
            "message, known aside": (
                sum(x.kube.message == x.ours.message or bool(x.known) for x in both_failed),
                len(both_failed),
            ),
            "node among best": (sum(x.kube.node in x.ours.best for x in both_bound), len(both_bound)),
            "same node": (sum(x.kube.node == x.ours.node for x in both_bound), len(both_bound)),
            "unique best, same node": (
                sum(x.kube.node == x.ours.node for x in both_bound if len(x.ours.best) == 1),
                sum(len(x.ours.best) == 1 for x in both_bound),
            ),
            "same nomination": (sum(x.kube.nominated == x.ours.nominated for x in both_nominated), len(both_nominated)),
            "same victims": (sum(x.kube.victims == x.ours.victims for x in both_nominated), len(both_nominated)),
            "no difference": (sum(not x.differences for x in c), len(c)),
            "no unexplained difference": (sum(not x.unexplained for x in c), len(c)),
        }

    def table(self) -> str:
        rows = [f"{'figure':<28} {'agree':>7} {'of':>6} {'%':>7}"]
        for name, (ok, n) in self.figures().items():
            pct = f"{100.0 * ok / n:.1f}" if n else "-"
            rows.append(f"{name:<28} {ok:>7} {n:>6} {pct:>7}")
        return "\n".join(rows)

    def unexplained(self) -> list[Case]:
        return [x for x in self.cases if x.unexplained]


def scheduler_config(name: str, extender: PassThroughExtender) -> dict[str, Any]:
    """kube-scheduler's: one profile, every node examined, the pass-through extender."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"qps": 500, "burst": 500},
        "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": name}],
        "extenders": [extender.config()],
    }


def run(
    cp: ControlPlane,
    seeds: Sequence[int],
    decide: Decider,
    *,
    knobs: Knobs | None = None,
    known: Sequence[KnownDifference] = KNOWN,
    node_cache_capable: bool = True,
    timeout: float = 30.0,
    progress: Callable[[Case], None] | None = None,
    report: Report | None = None,
) -> Report:
    """Every seed's scenario through kube-scheduler (started here, stopped at the end) and ``decide``; the
    cases go to ``report`` (a new one by default), so a caller keeps those of a run that failed midway."""
    run_id = "d" + uuid.uuid4().hex[:6]
    name = f"diff-{run_id}"
    report = report if report is not None else Report()
    with PassThroughExtender(node_cache_capable) as extender:
        sched = cp.start_scheduler(scheduler_config(name, extender), name=f"kube-scheduler-{run_id}")
        try:
            for seed in seeds:
                scenario = generate(seed, f"{run_id}s{seed}", name, knobs)
                _Driver(cp, scenario, decide, extender, known, timeout, report, progress).run()
        finally:
            sched.stop()
    return report


class _Driver:
    def __init__(
        self,
        cp: ControlPlane,
        scenario: Scenario,
        decide: Decider,
        extender: PassThroughExtender,
        known: Sequence[KnownDifference],
        timeout: float,
        report: Report,
        progress: Callable[[Case], None] | None,
    ) -> None:
        self.cp, self.sc, self.decide, self.extender = cp, scenario, decide, extender
        self.known, self.timeout, self.report, self.progress = known, timeout, report, progress
        self.started_count = 0

    def run(self) -> None:
        try:
            self.create()
            for manifest in self.sc.pending:
                case = self.one(manifest)
                self.report.cases.append(case)
                if self.progress is not None:
                    self.progress(case)
        finally:
            self.cleanup()

    def create(self) -> None:
        cp, sc = self.cp, self.sc
        for ns in sc.namespaces:
            cp.api("POST", "/api/v1/namespaces", ns)
        for pc in sc.priority_classes:
            cp.api("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc)
        for rc in sc.runtime_classes:
            cp.api("POST", "/apis/node.k8s.io/v1/runtimeclasses", rc)
        # Other kinds than pods first: kube-scheduler watches each kind apart, and the pods come last.
        for svc in sc.services:
            cp.api("POST", f"/api/v1/namespaces/{svc['metadata']['namespace']}/services", svc)
        for pdb, status in sc.pdbs:
            path = f"/apis/policy/v1/namespaces/{pdb['metadata']['namespace']}/poddisruptionbudgets"
            cp.api("POST", path, pdb)
            cp.api("PATCH", f"{path}/{pdb['metadata']['name']}/status", status)
        for manifest, status in sc.nodes:
            cp.create_node_object(manifest, status)
        for pod, status in sc.bound:
            path = f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods"
            cp.api("POST", path, pod)
            cp.api("PATCH", f"{path}/{pod['metadata']['name']}/status", status)
            if pod["metadata"]["name"] in sc.terminating:  # held by its finalizer: counted, and terminating
                cp.api("DELETE", f"{path}/{pod['metadata']['name']}")

    def cleanup(self) -> None:
        cp, sc = self.cp, self.sc
        for pod, _ in sc.bound:
            if pod["metadata"]["name"] in sc.terminating:
                meta = pod["metadata"]
                path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
                with contextlib.suppress(APIError):  # gone already (a preemption's victim)
                    cp.api("PATCH", path, {"metadata": {"finalizers": None}})
        for svc in sc.services:
            meta = svc["metadata"]
            with contextlib.suppress(APIError):
                cp.api("DELETE", f"/api/v1/namespaces/{meta['namespace']}/services/{meta['name']}")
        for pdb, _ in sc.pdbs:
            meta = pdb["metadata"]
            with contextlib.suppress(APIError):
                cp.api("DELETE", f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets/{meta['name']}")
        for ns in sc.namespaces:
            cp.delete_namespace(ns["metadata"]["name"])
        for manifest, _ in sc.nodes:
            cp.delete_node(manifest["metadata"]["name"])
        for kind, items in (
            ("scheduling.k8s.io/v1/priorityclasses", sc.priority_classes),
            ("node.k8s.io/v1/runtimeclasses", sc.runtime_classes),
        ):
            for obj in items:
                try:
                    cp.api("DELETE", f"/apis/{kind}/{obj['metadata']['name']}")
                except APIError as err:
                    if err.status != 404:
                        raise

    def snapshot(self) -> dict[str, list[Any]]:
        """What kube-scheduler watches, as it sees it: nodes, unfinished pods, namespaces, Services, PDBs."""
        api = self.cp.api
        unfinished = {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"}
        return {
            "nodes": api("GET", "/api/v1/nodes")["items"],
            "pods": api("GET", "/api/v1/pods", params=unfinished)["items"],
            "namespaces": api("GET", "/api/v1/namespaces")["items"],
            "services": api("GET", "/api/v1/services")["items"],
            "pdbs": api("GET", "/apis/policy/v1/poddisruptionbudgets")["items"],
        }

    def one(self, manifest: dict[str, Any]) -> Case:
        cp = self.cp
        ns, pod_name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
        path = f"/api/v1/namespaces/{ns}/pods"
        gated = {**manifest, "spec": {**manifest["spec"], "schedulingGates": [{"name": GATE}]}}
        created = cp.api("POST", path, gated)
        uid = created["metadata"]["uid"]
        snapshot = self.snapshot()
        for pod in snapshot["pods"]:
            if pod["metadata"]["uid"] == uid:
                pod["spec"].pop("schedulingGates", None)
        decided = self.decide(self.sc.scheduler_name, snapshot)
        ours = Answer(
            "bound" if decided.node else "nominated" if decided.nominated else "unschedulable",
            decided.node,
            decided.nominated,
            decided.message,
            tuple(sorted(decided.feasible)),
            tuple(sorted(decided.best)),
            tuple(sorted(decided.victims)),
        )
        cp.api("PATCH", f"{path}/{pod_name}", {"spec": {"schedulingGates": None}})
        kube = self.kube_answer(path, pod_name, uid, ours.victims)
        case = Case(self.sc.seed, f"{ns}/{pod_name}", manifest, kube, ours, compare(kube, ours))
        case.full_nodes = not self.extender.node_cache_capable
        case.known = [k.id for k in self.known if case.differences and k.applies(case)]
        return case

    def kube_answer(self, path: str, name: str, uid: str, expected: tuple[str, ...]) -> Answer:
        deadline = time.monotonic() + self.timeout
        answer: tuple[str | None, str | None, str] | None = None
        while answer is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"kube-scheduler did not decide {path}/{name} within {self.timeout:.0f}s")
            pod = self.cp.api("GET", f"{path}/{name}")
            node = pod["spec"].get("nodeName")
            if node:
                answer = (node, None, "")
                break
            for cond in pod.get("status", {}).get("conditions") or []:
                if cond["type"] == "PodScheduled" and cond.get("reason") in ("Unschedulable", "SchedulerError"):
                    answer = (None, pod["status"].get("nominatedNodeName") or None, cond.get("message", ""))
            if answer is None:
                time.sleep(0.02)
        feasible = tuple(sorted(self.extender.feasible(uid) or ()))
        node, nominated, message = answer
        if node:
            self.started(path, name)
            return Answer("bound", node, None, "", feasible)
        namespace = path.split("/")[4]
        if nominated:
            victims = self.evict_victims(expected)
            try:  # usually bound on the next attempt; if its room went elsewhere, it goes
                self.cp.wait_pod_bound(namespace, name, timeout=10.0)
                self.started(path, name)
            except TimeoutError:
                self.cp.api("DELETE", f"{path}/{name}", {"gracePeriodSeconds": 0})
            return Answer("nominated", None, nominated, message, feasible, victims=victims)
        self.cp.api("DELETE", f"{path}/{name}", {"gracePeriodSeconds": 0})
        return Answer("unschedulable", None, None, message, feasible)

    def started(self, path: str, name: str) -> None:
        """As the kubelet would: the bound pod runs, with a start time after every earlier pod's."""
        self.started_count += 1
        status = {"status": {"phase": "Running", "startTime": started_at(1000 + self.started_count)}}
        self.cp.api("PATCH", f"{path}/{name}/status", status)

    def evict_victims(self, expected: tuple[str, ...]) -> tuple[str, ...]:
        """The pods kube-scheduler's preemption marks (condition DisruptionTarget, before it deletes them;
        without a kubelet they stay terminating, so its first answer can be read; a victim terminating already
        gets no call, as from kubesched's `evict`): waited for until they are the ``expected`` ones or for 2 s
        after the first (it marks them in parallel), then deleted for good (finalizers cleared) so that the
        preemptor binds."""
        deadline = time.monotonic() + self.timeout
        first: float | None = None
        while True:
            victims = [
                p
                for ns in self.sc.namespaces
                for p in self.cp.api("GET", f"/api/v1/namespaces/{ns['metadata']['name']}/pods")["items"]
                if any(c["type"] == "DisruptionTarget" for c in p.get("status", {}).get("conditions") or [])
            ]
            names = tuple(sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in victims))
            now = time.monotonic()
            if victims and first is None:
                first = now
            if names == expected or (first is not None and now > first + 2.0) or now > deadline:
                break
            time.sleep(0.02)
        for p in victims:
            path = f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}"
            with contextlib.suppress(APIError):  # gone already
                if p["metadata"].get("finalizers"):
                    self.cp.api("PATCH", path, {"metadata": {"finalizers": None}})
                self.cp.api("DELETE", path, {"gracePeriodSeconds": 0})
        return names
