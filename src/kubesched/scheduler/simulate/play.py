"""A scenario played on a cluster by the embedded scheduler (`scheduler run --cluster`'s very pieces:
`MemoryCluster`, `Scheduler`, `run_until_settled`), deterministically: a manual clock, seeded tie-breaks,
objects generated in a fixed order with fixed names and UIDs."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import msgspec

from kubesched.api.core import (
    Container,
    Node,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodSpec,
    PodStatus,
    ResourceRequirements,
    Workload,
    WorkloadSpec,
)
from kubesched.api.core import LabelSelector as CoreSelector
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.defaulting import DefaultingError, PriorityClass, default_pod, priority_classes
from kubesched.cluster.files import ClusterFile
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.storage import volume_objects
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME
from kubesched.core.quantity import to_int, to_milli
from kubesched.errors import FieldError, KubeschedError, child
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, normalize, run_until_settled
from kubesched.scheduler.remote.extenders import ExtenderSet
from kubesched.scheduler.simulate import measure
from kubesched.scheduler.simulate.model import (
    ZONE_LABEL,
    Aggregate,
    PodDecision,
    Preemption,
    Run,
    Simulation,
    StepResult,
)
from kubesched.scheduler.simulate.scenario import AddNodes, AddPods, Scenario, ScenarioError, Selection, Step

FILLER_NAMESPACE = "kubesched-simulate"
FILLER_LABEL = "kubesched.io/simulate-filler"
OWNER_KINDS_RECREATED = ("ReplicaSet", "StatefulSet", "Job", "ReplicationController")


class SimulationError(KubeschedError):
    """A step that cannot be applied (a node named that is not there, a name generated twice)."""


@dataclass
class Options:
    seed: int = 0
    records: bool = True  # per-pod decisions and per-node states in each step (off: aggregates only)
    batching: bool = True  # the OpportunisticBatching feature gate, as `scheduler run`
    label: str = "A"
    config: str = ""


@dataclass
class _State:
    cluster: MemoryCluster
    scheduler: Scheduler
    clock: ManualClock
    waiting: list[Pod]  # the snapshot's pending pods, until replayPending
    tracked: dict[str, str] = field(default_factory=dict)  # uid -> key of every pod that was pending here
    keys: dict[str, str] = field(default_factory=dict)  # uid -> key of every pod ever in the cluster
    fillers: set[str] = field(default_factory=set)  # filler pods' uids
    serial: int = 0
    preemptions: int = 0
    events_seen: int = 0
    replayed: bool = False

    def uid(self) -> str:
        self.serial += 1
        return f"simulate-{self.serial}"


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
    scheduler = Scheduler(
        ClusterCache(),
        cluster,
        build,
        clock=clock,
        rng=random.Random(options.seed),
        batching=options.batching,
        extenders=ExtenderSet,
        default_selector=found.workloads.default_selector,
        volumes=cluster.volumes,
        resources=resources,
    )
    cluster.attach(scheduler)
    st = _State(cluster, scheduler, clock, waiting)
    st.keys = {uid: _key(p) for uid, p in cluster.pods.items()}
    classes = priority_classes(found.priority_classes)
    run = Run(label=options.label, config=options.config, profiles=sorted(scheduler.built.profiles))
    ext = measure.extended(scheduler.cache.table)
    if options.records:
        run.initial = measure.node_states(scheduler.cache.table, ext)
    run.initial_aggregate = _aggregate(st, ext)
    for step in scenario.steps:
        result = StepResult(index=step.index, name=step.name, aggregate=run.initial_aggregate)
        result.actions = _apply(st, step, classes, found)
        ext = measure.extended(scheduler.cache.table)
        attempted = [uid for uid, p in cluster.pods.items() if not p.spec.node_name]
        result.cycles = await run_until_settled(scheduler, clock)
        result.preemptions = _preemptions(st)
        if options.records:
            result.decisions = [_decision(st, uid, st.keys[uid]) for uid in attempted]
            result.nodes = measure.node_states(scheduler.cache.table, ext)
        result.aggregate = _aggregate(st, ext)
        run.steps.append(result)
    final = [_decision(st, uid, key) for uid, key in st.tracked.items()]
    latest = {d.pod: d for d in final}  # a recreated pod: its last incarnation
    if options.records:
        run.final = list(latest.values())
    return run, list(latest.values())


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def _aggregate(st: _State, ext: list[str]) -> Aggregate:
    used = {p.spec.node_name for uid, p in st.cluster.pods.items() if p.spec.node_name and uid not in st.fillers}
    pods = st.cluster.pods
    placed = sum(1 for uid in st.tracked if (p := pods.get(uid)) is not None and p.spec.node_name)
    pending = sum(1 for p in pods.values() if not p.spec.node_name)
    table = st.scheduler.cache.table
    return measure.aggregate(table, ext, used=len(used), placed=placed, pending=pending, preemptions=st.preemptions)


def _decision(st: _State, uid: str, key: str) -> PodDecision:
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


def _preemptions(st: _State) -> list[Preemption]:
    events = st.cluster.events
    out = []
    for e in events[st.events_seen :]:
        if e.reason != "Preempted":
            continue
        # "Preempted by pod <uid> on node <node>"
        rest = e.note.removeprefix("Preempted by pod ")
        uid, _, node = rest.partition(" on node ")
        out.append(Preemption(e.regarding, st.keys.get(uid, uid), node))
    st.events_seen = len(events)
    if len(events) > 100_000:  # the events are not needed once read: memory stays bounded over many steps
        del events[:]
        st.events_seen = 0
    st.preemptions += len(out)
    return out


def _apply(st: _State, step: Step, classes: Mapping[str, PriorityClass], found: ClusterFile) -> list[str]:
    """The step's actions, in the documented order; a line saying what each did."""
    path = f"steps[{step.index}]"
    out = []
    if step.drain is not None:
        out.append(_drain(st, step.drain, child(path, "drain"), remove=False))
    if step.remove_nodes is not None:
        out.append(_drain(st, step.remove_nodes, child(path, "removeNodes"), remove=True))
    if step.delete_pods is not None:
        out.append(_delete_pods(st, step.delete_pods))
    for i, gen in enumerate(step.add_nodes):
        at = child(path, "addNodes") + (f"[{i}]" if len(step.add_nodes) > 1 else "")
        out.append(_add_nodes(st, gen, at))
    if step.replay_pending:
        out.append(_replay(st))
    for pods in step.add_pods:
        out.append(_add_pods(st, pods, classes, found))
    return out


def _add_pod(st: _State, pod: Pod, track: bool) -> None:
    uid = pod.metadata.uid
    st.cluster.pods[uid] = pod
    st.keys[uid] = _key(pod)
    if track:
        st.tracked[uid] = _key(pod)
    st.scheduler.pod_upserted(pod)


def _drain(st: _State, sel: Selection, path: str, remove: bool) -> str:
    nodes = st.cluster.nodes
    for i, name in enumerate(sel.names):
        if name not in nodes:
            raise SimulationError(f"{path}.names[{i}]: no node {name!r} in the cluster")
    chosen = sorted(n for n, node in nodes.items() if sel.matches(n, node.metadata.labels))
    chosen_set = set(chosen)
    evicted = recreated = 0
    for name in chosen:
        node = nodes[name]
        cordoned = msgspec.structs.replace(node, spec=msgspec.structs.replace(node.spec, unschedulable=True))
        nodes[name] = cordoned
        st.scheduler.node_upserted(cordoned)
    for uid, pod in list(st.cluster.pods.items()):
        if pod.spec.node_name not in chosen_set:
            continue
        evicted += 1
        del st.cluster.pods[uid]
        st.scheduler.pod_deleted(pod)
        st.fillers.discard(uid)
        if _recreated(pod, uid, st):
            recreated += 1
            meta = msgspec.structs.replace(pod.metadata, uid=st.uid())
            spec = msgspec.structs.replace(pod.spec, node_name="")
            _add_pod(st, msgspec.structs.replace(pod, metadata=meta, spec=spec, status=PodStatus()), track=True)
    if remove:
        for name in chosen:
            st.scheduler.node_deleted(nodes.pop(name))
    verb = "removeNodes" if remove else "drain"
    return f"{verb}: {len(chosen)} node(s){_names(chosen)}; {evicted} pod(s) evicted, {recreated} recreated pending"


def _recreated(pod: Pod, uid: str, st: _State) -> bool:
    """A controller's pod comes back pending (as its ReplicaSet would make it again); DaemonSet pods, bare
    pods and filler pods do not."""
    if uid in st.tracked:
        return True
    owners = pod.metadata.owner_references or []
    return any(o.controller and o.kind in OWNER_KINDS_RECREATED for o in owners)


def _delete_pods(st: _State, sel: Selection) -> str:
    wanted = {n if "/" in n else f"{sel.namespace or 'default'}/{n}" for n in sel.names}
    deleted = 0
    for uid, pod in list(st.cluster.pods.items()):
        key = _key(pod)
        if sel.namespace is not None and pod.metadata.namespace != sel.namespace and key not in wanted:
            continue
        if key in wanted or (sel.selector is not None and sel.matches("", pod.metadata.labels)):
            deleted += 1
            del st.cluster.pods[uid]
            st.fillers.discard(uid)
            st.scheduler.pod_deleted(pod)
    return f"deletePods: {deleted} pod(s) deleted"


def _add_nodes(st: _State, gen: AddNodes, path: str) -> str:
    nodes = st.cluster.nodes
    names = [f"{gen.prefix}-{i}" for i in range(gen.count)]
    for name in names:
        if name in nodes:
            raise SimulationError(f"{child(path, 'namePrefix')}: node {name!r} exists already")
    template = gen.template
    allocatable = template.status.allocatable or {}
    status = (
        template.status if template.status.capacity else msgspec.structs.replace(template.status, capacity=allocatable)
    )
    fillers = 0
    for i, name in enumerate(names):
        labels = {**(template.metadata.labels or {}), "kubernetes.io/hostname": name}
        if gen.zones:
            labels[ZONE_LABEL] = gen.zones[i % len(gen.zones)]
        node = Node(msgspec.structs.replace(template.metadata, name=name, uid="", labels=labels), template.spec, status)
        nodes[name] = node
        st.scheduler.node_upserted(node)
        requests = _used(allocatable, gen.used)
        if requests:
            fillers += 1
            uid = st.uid()
            filler = Pod(
                ObjectMeta(name=f"{name}-used", namespace=FILLER_NAMESPACE, uid=uid, labels={FILLER_LABEL: "true"}),
                PodSpec(
                    node_name=name,
                    scheduler_name=DEFAULT_SCHEDULER_NAME,
                    priority=0,
                    containers=[Container(name="used", resources=ResourceRequirements(requests=requests))],
                ),
            )
            st.fillers.add(uid)
            _add_pod(st, filler, track=False)
    return f"addNodes: {gen.count} node(s){_names(names)}" + (f", {fillers} partly used" if fillers else "")


def _used(allocatable: dict[str, str | int | float], used: dict[str, float]) -> dict[str, str | int | float]:
    """What a filler pod requests: each resource's fraction of the allocatable (rounded down)."""
    out: dict[str, str | int | float] = {}
    for resource, amount in allocatable.items():
        fraction = used.get(resource, used.get("*", 0.0))
        if resource == "pods" or not fraction:
            continue
        if resource == "cpu":
            out[resource] = f"{int(to_milli(amount) * fraction)}m"
        else:
            value = int(to_int(amount) * fraction)
            if value:
                out[resource] = value
    return out


def _replay(st: _State) -> str:
    if st.replayed:
        return "replayPending: already replayed"
    st.replayed = True
    for pod in st.waiting:
        _add_pod(st, pod, track=True)
    return f"replayPending: {len(st.waiting)} pending pod(s) of the cluster file"


def _add_pods(st: _State, gen: AddPods, classes: Mapping[str, PriorityClass], found: ClusterFile) -> str:
    meta = dict(gen.template.get("metadata") or {})
    meta.update(name=gen.name, namespace=gen.namespace)
    raw = {**gen.template, "metadata": meta}
    raw["spec"] = {k: v for k, v in raw["spec"].items() if k != "nodeName"}
    try:
        template = msgspec.convert(default_pod(raw, classes), Pod)
    except DefaultingError as err:
        raise ScenarioError(errors=[FieldError(gen.path, str(err))]) from None
    except msgspec.ValidationError as err:
        raise ScenarioError(errors=[FieldError(gen.path, str(err))]) from None
    existing = {_key(p) for p in st.cluster.pods.values()}
    names = [f"{gen.name}-{i}" for i in range(gen.replicas)]
    for name in names:
        if f"{gen.namespace}/{name}" in existing:
            raise SimulationError(f"{gen.path.rsplit('.', 1)[0]}.name: pod {gen.namespace}/{name} exists already")
    owner = OwnerReference(
        api_version="apps/v1", kind="ReplicaSet", name=gen.name, uid=f"simulate-rs-{gen.name}", controller=True
    )
    labels = template.metadata.labels
    if labels:  # PodTopologySpread's default constraints select the pods of their ReplicaSet
        found.workloads.replica_sets.upsert(
            Workload(
                ObjectMeta(name=gen.name, namespace=gen.namespace),
                WorkloadSpec(CoreSelector(match_labels=dict(labels))),
            )
        )
    base = template.metadata
    for name in names:
        meta_i = msgspec.structs.replace(base, name=name, uid=st.uid(), owner_references=[owner])
        _add_pod(st, msgspec.structs.replace(template, metadata=meta_i), track=True)
    return f"addPods: {gen.replicas} pod(s) {gen.namespace}/{gen.name}-0..{gen.replicas - 1}"


def _names(names: list[str]) -> str:
    if not names:
        return ""
    if len(names) <= 3:
        return " " + ", ".join(names)
    return f" {names[0]} … {names[-1]}"


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
