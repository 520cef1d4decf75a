"""A scenario played on a cluster by the embedded scheduler (`scheduler run --cluster`'s very pieces:
`MemoryCluster`, `Scheduler`, `run_until_settled`), deterministically: a manual clock, seeded tie-breaks,
objects generated in a fixed order with fixed names and UIDs."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.defaulting import priority_classes
from kubesched.cluster.files import ClusterFile
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.storage import volume_objects
from kubesched.cluster.workloads import Workloads
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, normalize, run_until_settled
from kubesched.scheduler.remote.extenders import ExtenderSet
from kubesched.scheduler.simulate import measure
from kubesched.scheduler.simulate.actions import State, apply, key_of
from kubesched.scheduler.simulate.model import (
    Aggregate,
    PodDecision,
    Preemption,
    Run,
    Simulation,
    StepResult,
)
from kubesched.scheduler.simulate.scenario import Scenario
from kubesched.scheduler.simulate.scores import ScoreHistograms

# Per-pod decisions and per-node states kept in one run (~200 bytes each): 1,000 steps of 50,000 nodes
# would be 50 million; past this bound the steps keep their aggregates only.
MAX_RECORDS = 2_000_000


@dataclass
class Options:
    seed: int = 0
    records: bool = True  # per-pod decisions and per-node states in each step (off: aggregates only)
    batching: bool = True  # the OpportunisticBatching feature gate, as `scheduler run`
    label: str = "A"
    config: str = ""


async def play(
    scenario: Scenario, found: ClusterFile, build: Callable[[Callable[[str], Handle]], Built], options: Options
) -> tuple[Run, list[PodDecision]]:
    """Every step of ``scenario`` on ``found``'s objects; the run and every tracked pod's end state."""
    bound = [p for p in found.pods if p.spec.node_name]
    waiting = normalize([p for p in found.pods if not p.spec.node_name])
    waiting = [
        msgspec.structs.replace(p, metadata=msgspec.structs.replace(p.metadata, uid=f"{p.metadata.uid}-pending"))
        for p in waiting
    ]
    resources = ResourceObjects(found.device_classes, found.resource_slices, found.resource_claims)
    cluster = MemoryCluster(
        found.nodes, bound, found.pdbs, found.namespaces, volumes=volume_objects(found.storage), resources=resources
    )
    clock = ManualClock()
    workloads = _copy(found.workloads)  # each run its own: addPods registers its ReplicaSets there
    scheduler = Scheduler(
        ClusterCache(),
        cluster,
        build,
        clock=clock,
        rng=random.Random(options.seed),
        batching=options.batching,
        extenders=ExtenderSet,
        default_selector=workloads.default_selector,
        volumes=cluster.volumes,
        resources=resources,
    )
    cluster.attach(scheduler)
    histograms = ScoreHistograms() if options.records else None
    scheduler.cycle.observe_scores = histograms
    st = State(cluster, scheduler, clock, waiting, workloads)
    st.keys = {uid: key_of(p) for uid, p in cluster.pods.items()}
    st.uids = {key: uid for uid, key in st.keys.items()}
    classes = priority_classes(found.priority_classes)
    run = Run(label=options.label, config=options.config, profiles=sorted(scheduler.built.profiles))
    ext = measure.extended(scheduler.cache.table)
    if options.records:
        run.initial = measure.node_states(scheduler.cache.table, ext)
        st.recorded = len(run.initial)
    run.initial_aggregate = _aggregate(st, ext)
    for step in scenario.steps:
        result = StepResult(index=step.index, name=step.name, aggregate=run.initial_aggregate)
        result.actions = apply(st, step, classes)
        ext = measure.extended(scheduler.cache.table)
        result.cycles = await run_until_settled(scheduler, clock)
        attempted, result.preemptions = _events(st)
        if options.records and not _over(run, st, len(attempted) + len(scheduler.cache.table)):
            result.decisions = [_decision(st, st.uids[key], key) for key in attempted if key in st.uids]
            result.nodes = measure.node_states(scheduler.cache.table, ext)
        result.aggregate = _aggregate(st, ext)
        run.steps.append(result)
    final = [_decision(st, uid, key) for uid, key in st.tracked.items()]
    latest = {d.pod: d for d in final}  # a recreated pod: its last incarnation
    if options.records:
        run.final = list(latest.values())
    if histograms is not None:
        run.scores = histograms.distributions()
    return run, list(latest.values())


def _over(run: Run, st: State, more: int) -> bool:
    """Whether this step's records would pass MAX_RECORDS (then they stop, and a note says so)."""
    st.recorded += more
    if st.recorded <= MAX_RECORDS:
        return False
    if not run.notes or not run.notes[-1].startswith("records stopped"):
        run.notes.append(
            f"records stopped at step {len(run.steps)}: more than {MAX_RECORDS} pod decisions and node states"
            " (the aggregates go on; --no-records, or fewer steps or nodes)"
        )
    return True


def _copy(workloads: Workloads) -> Workloads:
    out = Workloads()
    out.services.by_namespace = {ns: dict(m) for ns, m in workloads.services.by_namespace.items()}
    out.controllers.by_namespace = {ns: dict(m) for ns, m in workloads.controllers.by_namespace.items()}
    out.replica_sets.by_namespace = {ns: dict(m) for ns, m in workloads.replica_sets.by_namespace.items()}
    out.stateful_sets.by_namespace = {ns: dict(m) for ns, m in workloads.stateful_sets.by_namespace.items()}
    return out


def _aggregate(st: State, ext: list[str]) -> Aggregate:
    used: set[str] = set()
    placed = pending = 0
    tracked, fillers = st.tracked, st.fillers
    for uid, p in st.cluster.pods.items():  # one pass: a step costs O(pods) beside its cycles
        node = p.spec.node_name
        if not node:
            pending += 1
        elif uid not in fillers:
            used.add(node)
            placed += uid in tracked
    table = st.scheduler.cache.table
    return measure.aggregate(table, ext, used=len(used), placed=placed, pending=pending, preemptions=st.preemptions)


def _decision(st: State, uid: str, key: str) -> PodDecision:
    pod = st.cluster.pods.get(uid)
    if pod is None:
        return PodDecision(key, None, "deleted (preempted, drained or deletePods)")
    if pod.spec.node_name:
        return PodDecision(key, pod.spec.node_name)
    condition = st.cluster.conditions.get(key)
    if condition is not None:
        message = condition[1]
    elif pod.spec.scheduling_gates:
        message = f"waiting for scheduling gates: [{' '.join(g.name for g in pod.spec.scheduling_gates)}]"
    elif (entry := st.scheduler.queue.get(uid)) is not None and not entry.gate.ok:
        message = entry.gate.message
    elif st.scheduler.profile_for(pod) not in st.scheduler.built.profiles:
        message = f"no profile for schedulerName {st.scheduler.profile_for(pod)!r}"
    else:
        message = "not attempted"
    return PodDecision(key, None, message, pod.status.nominated_node_name or None)


def _events(st: State) -> tuple[list[str], list[Preemption]]:
    """The step's events, then forgotten (memory stays bounded over many steps): the pods attempted (each
    attempt reports Scheduled or FailedScheduling), in the order of their first attempt, and the preemptions."""
    attempted: dict[str, None] = {}
    evicted: list[tuple[str, str, str]] = []
    failed: dict[str, str] = {}  # each pod's first FailedScheduling message of the step
    for e in st.cluster.events:
        if e.reason == "Preempted":
            # "Preempted by pod <uid> on node <node>"
            uid, _, node = e.note.removeprefix("Preempted by pod ").partition(" on node ")
            evicted.append((e.regarding, st.keys.get(uid, uid), node))
        elif e.reason in ("Scheduled", "FailedScheduling"):
            attempted[e.regarding] = None
            if e.reason == "FailedScheduling":
                failed.setdefault(e.regarding, e.note)
    out = [Preemption(victim, by, node, failed.get(by, "")) for victim, by, node in evicted]
    st.cluster.events.clear()
    st.preemptions += len(out)
    return list(attempted), out


async def simulate(
    scenario: Scenario,
    found: ClusterFile,
    builds: list[tuple[str, Callable[[Callable[[str], Handle]], Built]]],
    options: Options,
    *,
    kubernetes_version: str,
    cluster: str,
    scenario_file: str,
) -> Simulation:
    """The scenario under each configuration (``builds``: its name, or "" for the defaults, and its builder);
    with two, the second compared with the first."""
    out = Simulation(
        kubernetes_version=kubernetes_version,
        cluster=cluster,
        scenario=scenario_file,
        scenario_name=scenario.name,
        seed=options.seed,
        records=options.records,
    )
    finals = []
    for label, (config, build) in zip("AB", builds, strict=False):
        run, final = await play(scenario, found, build, dataclasses.replace(options, label=label, config=config))
        out.runs.append(run)
        finals.append(final)
    if len(out.runs) == 2:
        out.comparison = measure.compare(out.runs[0], out.runs[1], finals[0], finals[1])
    return out
