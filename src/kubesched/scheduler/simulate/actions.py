"""The steps' actions on the in-memory cluster, each told to the scheduler through the event methods a watch
calls: nodes generated like a template (filler pods for their used share), Deployment-like replicas, drains
and removals (a controller's pods recreated pending), deletions, the cluster file's pending pods replayed."""

from __future__ import annotations

from collections.abc import Mapping
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
from kubesched.cluster.defaulting import DefaultingError, PriorityClass, default_pod
from kubesched.cluster.workloads import Workloads
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME
from kubesched.core.quantity import to_int, to_milli
from kubesched.errors import FieldError, KubeschedError, child
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster
from kubesched.scheduler.simulate.model import ZONE_LABEL
from kubesched.scheduler.simulate.scenario import AddNodes, AddPods, ScenarioError, Selection, Step

FILLER_NAMESPACE = "kubesched-simulate"
FILLER_LABEL = "kubesched.io/simulate-filler"
OWNER_KINDS_RECREATED = ("ReplicaSet", "StatefulSet", "Job", "ReplicationController")


class SimulationError(KubeschedError):
    """A step that cannot be applied (a node named that is not there, a name generated twice)."""


@dataclass
class State:
    cluster: MemoryCluster
    scheduler: Scheduler
    clock: ManualClock
    waiting: list[Pod]  # the snapshot's pending pods, until replayPending
    workloads: Workloads  # what PodTopologySpread's default constraints select by
    tracked: dict[str, str] = field(default_factory=dict)  # uid -> key of every pod that was pending here
    keys: dict[str, str] = field(default_factory=dict)  # uid -> key of every pod ever in the cluster
    uids: dict[str, str] = field(default_factory=dict)  # key -> uid of its latest incarnation
    fillers: set[str] = field(default_factory=set)  # filler pods' uids
    serial: int = 0
    recorded: int = 0  # decisions and node states recorded so far
    preemptions: int = 0
    replayed: bool = False

    def uid(self) -> str:
        self.serial += 1
        return f"simulate-{self.serial}"


def key_of(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def apply(st: State, step: Step, classes: Mapping[str, PriorityClass]) -> list[str]:
    """The step's actions, in the documented order (scenario.ACTIONS); a line saying what each did."""
    path = f"steps[{step.index}]"
    out = []
    if step.drain is not None:
        out.append(_drain(st, step.drain, child(path, "drain"), remove=False))
    if step.remove_nodes is not None:
        out.append(_drain(st, step.remove_nodes, child(path, "removeNodes"), remove=True))
    if step.delete_pods is not None:
        out.append(_delete_pods(st, step.delete_pods))
    for gen in step.add_nodes:
        out.append(_add_nodes(st, gen, gen.path or child(path, "addNodes")))
    if step.replay_pending:
        out.append(_replay(st))
    for pods in step.add_pods:
        out.append(_add_pods(st, pods, classes))
    return out


def _add_pod(st: State, pod: Pod, track: bool) -> None:
    uid = pod.metadata.uid
    st.cluster.pods[uid] = pod
    st.keys[uid] = key_of(pod)
    st.uids[key_of(pod)] = uid
    if track:
        st.tracked[uid] = key_of(pod)
    st.scheduler.pod_upserted(pod)


def _drain(st: State, sel: Selection, path: str, remove: bool) -> str:
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


def _recreated(pod: Pod, uid: str, st: State) -> bool:
    """A controller's pod comes back pending (as its ReplicaSet would make it again); DaemonSet pods, bare
    pods and filler pods do not."""
    if uid in st.tracked:
        return True
    owners = pod.metadata.owner_references or []
    return any(o.controller and o.kind in OWNER_KINDS_RECREATED for o in owners)


def _delete_pods(st: State, sel: Selection) -> str:
    wanted = {n if "/" in n else f"{sel.namespace or 'default'}/{n}" for n in sel.names}
    deleted = 0
    for uid, pod in list(st.cluster.pods.items()):
        key = key_of(pod)
        if sel.namespace is not None and pod.metadata.namespace != sel.namespace and key not in wanted:
            continue
        if key in wanted or (sel.selector is not None and sel.matches("", pod.metadata.labels)):
            deleted += 1
            del st.cluster.pods[uid]
            st.fillers.discard(uid)
            st.scheduler.pod_deleted(pod)
    return f"deletePods: {deleted} pod(s) deleted"


def _add_nodes(st: State, gen: AddNodes, path: str) -> str:
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


def _replay(st: State) -> str:
    if st.replayed:
        return "replayPending: already replayed"
    st.replayed = True
    for pod in st.waiting:
        _add_pod(st, pod, track=True)
    return f"replayPending: {len(st.waiting)} pending pod(s) of the cluster file"


def _add_pods(st: State, gen: AddPods, classes: Mapping[str, PriorityClass]) -> str:
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
    existing = {key_of(p) for p in st.cluster.pods.values()}
    names = [f"{gen.name}-{i}" for i in range(gen.replicas)]
    for name in names:
        if f"{gen.namespace}/{name}" in existing:
            raise SimulationError(f"{gen.path.rsplit('.', 1)[0]}.name: pod {gen.namespace}/{name} exists already")
    owner = OwnerReference(
        api_version="apps/v1", kind="ReplicaSet", name=gen.name, uid=f"simulate-rs-{gen.name}", controller=True
    )
    labels = template.metadata.labels
    if labels:  # PodTopologySpread's default constraints select the pods of their ReplicaSet
        st.workloads.replica_sets.upsert(
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
