"""The embedded default: an in-memory cluster behind the very same cache, queue and scheduler.

`kubesched scheduler run --cluster FILE` reads nodes and pods (a pod without spec.nodeName is pending),
feeds them to the scheduler through the event methods the API watch uses, binds in memory (the bound
pod comes back as a pod update, as from a watch), evicts by deleting, and records events. Time is a
manual clock that jumps over backoff waits, so the run ends as soon as nothing more can happen.
`decide` runs one pending pod of a snapshot the same way and says also which nodes pass Filter and which
score best (the differential test against kube-scheduler, `kubesched.testing.differential`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec

from kubesched.api.core import Namespace, Node, Pod, Service
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.objects import ClusterObjects
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.volumes import VolumeObjects
from kubesched.cluster.workloads import Workloads
from kubesched.config.profiles import parse
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME
from kubesched.core.podinfo import PodInfo
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.handle import DefaultSelector
from kubesched.framework.interfaces import AlreadyAssignedError, ClusterAPIError, CycleState, Handle, NodeBatch
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.engine.cycle import find
from kubesched.scheduler.engine.extenders import NoExtenders
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.engine.state import Placement
from kubesched.scheduler.profiles.manager import Loaded, load
from kubesched.versions import REFERENCE, Release


class Event(msgspec.Struct, frozen=True):
    """What an events.k8s.io/v1 Event would say (a Struct: one is made per pod, a frozen dataclass costs 8x)."""

    type: str
    reason: str
    regarding: str
    note: str
    reporting_controller: str


def normalize(pods: Sequence[Pod]) -> list[Pod]:
    """Pods as the API server would store them: a namespace, a UID, a scheduler name."""
    out = []
    for i, pod in enumerate(pods):
        meta = pod.metadata
        namespace = meta.namespace or "default"
        uid = meta.uid or f"memory-{i}-{namespace}-{meta.name}"
        spec = (
            pod.spec
            if pod.spec.scheduler_name
            else msgspec.structs.replace(pod.spec, scheduler_name=DEFAULT_SCHEDULER_NAME)
        )
        out.append(
            msgspec.structs.replace(
                pod, metadata=msgspec.structs.replace(meta, namespace=namespace, uid=uid), spec=spec
            )
        )
    return out


class MemoryCluster:
    """Nodes and pods in dicts; implements the scheduler's ClusterWriter (and so the plugins' ClusterAPI)."""

    # `bind` never awaits: the Binder may run its binding cycles without a task each.
    binds_inline: ClassVar[bool] = True

    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Sequence[Pod],
        pdbs: Sequence[PodDisruptionBudget] = (),
        namespaces: Sequence[Namespace] = (),
        volumes: VolumeObjects | None = None,
        resources: ResourceObjects | None = None,
    ) -> None:
        self.nodes = {n.metadata.name: n for n in nodes}
        self.pods = {p.metadata.uid: p for p in normalize(pods)}
        self.pending = [f"{p.metadata.namespace}/{p.metadata.name}" for p in self.pods.values() if not p.spec.node_name]
        self.objects = ClusterObjects(pdbs, namespaces)  # what preemption and namespaceSelectors read
        # PVs, PVCs, StorageClasses, CSINodes: a binding at PreBind applies here, completed at once.
        self.volumes = volumes if volumes is not None else VolumeObjects()
        # DeviceClasses, ResourceSlices, ResourceClaims: PreBind's allocations are written there.
        self.resources = resources if resources is not None else ResourceObjects()
        self.events: list[Event] = []
        self.conditions: dict[str, tuple[str, str]] = {}  # pod key -> (reason, message)
        self.scheduler: Scheduler | None = None

    def attach(self, scheduler: Scheduler) -> None:
        """Hand the cluster's objects to the scheduler, as a watch's first list would."""
        self.scheduler = scheduler
        self.volumes.on_change = scheduler.volume_changed
        self.resources.on_change = scheduler.resources_changed
        scheduler.nodes_replaced(list(self.nodes.values()))
        scheduler.pods_replaced(list(self.pods.values()))
        scheduler.cache.tracks_pods = True
        scheduler.cache.synced.set()

    def _sched(self) -> Scheduler:
        if self.scheduler is None:
            raise ClusterAPIError("the in-memory cluster is not attached to a scheduler")
        return self.scheduler

    # ---- ClusterAPI -------------------------------------------------------------------------------------

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        obj = self.pods.get(pod.uid)
        if obj is None:
            raise ClusterAPIError(f'pods "{pod.name}" not found')
        if obj.spec.node_name:
            # kube-apiserver's 409, word for word.
            raise AlreadyAssignedError(
                f'Operation cannot be fulfilled on pods/binding "{pod.name}": pod {pod.name} is already assigned'
                f' to node "{obj.spec.node_name}"',
                obj.spec.node_name,
            )
        if node_name not in self.nodes:
            raise ClusterAPIError(f'nodes "{node_name}" not found')
        bound = msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.spec, node_name=node_name))
        self.pods[pod.uid] = bound
        self._sched().pod_upserted(bound)

    async def bound_node(self, pod: PodInfo) -> str | None:
        """As `APIServerWriter.bound_node`: the pod's node, '' while pending, None when gone."""
        obj = self.pods.get(pod.uid)
        return None if obj is None else obj.spec.node_name or ""

    async def evict(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> None:
        obj = self.pods.pop(victim.uid, None)
        if obj is None:
            return
        self.events.append(
            Event("Normal", "Preempted", victim.key, f"Preempted by pod {preemptor.uid} on node {node_name}", "")
        )
        self._sched().pod_deleted(obj)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        obj = self.pods.get(pod.uid)
        if obj is not None:
            status = msgspec.structs.replace(obj.status, nominated_node_name=node_name)
            self.pods[pod.uid] = msgspec.structs.replace(obj, status=status)

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self.objects.pdbs()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.objects.namespace_labels(namespace)

    # ---- reporting --------------------------------------------------------------------------------------

    def scheduled(self, pod: PodInfo, node: str, scheduler_name: str) -> None:
        note = f"Successfully assigned {pod.key} to {node}"
        self.events.append(Event("Normal", "Scheduled", pod.key, note, scheduler_name))
        self.conditions.pop(pod.key, None)

    def failed(self, pod: PodInfo, scheduler_name: str, reason: str, message: str, nominated: str | None) -> None:
        self.events.append(Event("Warning", "FailedScheduling", pod.key, message, scheduler_name))
        self.conditions[pod.key] = (reason, message)
        if nominated is not None:
            obj = self.pods.get(pod.uid)
            if obj is not None:
                status = msgspec.structs.replace(obj.status, nominated_node_name=nominated)
                self.pods[pod.uid] = msgspec.structs.replace(obj, status=status)

    async def aclose(self) -> None:
        return None

    # ---- the run ----------------------------------------------------------------------------------------

    def placements(self) -> list[Placement]:
        """Each pod that was pending: where it is now, or the last reason it did not fit."""
        sched = self._sched()
        by_key = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in self.pods.values()}
        out = []
        for key in self.pending:
            pod = by_key.get(key)
            if pod is not None and pod.spec.node_name:
                out.append(Placement(key, pod.spec.node_name, None))
                continue
            placement = sched.placements.get(key)
            if pod is None:
                out.append(Placement(key, None, "preempted: deleted to make room for a higher-priority pod"))
            elif pod.spec.scheduling_gates:
                gates = " ".join(g.name for g in pod.spec.scheduling_gates)
                out.append(Placement(key, None, f"waiting for scheduling gates: [{gates}]"))
            elif placement is not None and placement.reason:
                out.append(Placement(key, None, placement.reason))
            elif (entry := sched.queue.get(pod.metadata.uid)) is not None and not entry.gate.ok:
                out.append(Placement(key, None, entry.gate.message))  # held back by a PreEnqueue plugin
            elif sched.profile_for(pod) not in sched.built.profiles:
                out.append(Placement(key, None, f"no profile for schedulerName {sched.profile_for(pod)!r}"))
            else:
                out.append(Placement(key, None, "not attempted"))
        return out


async def run_until_settled(scheduler: Scheduler, clock: ManualClock, max_cycles: int | None = None) -> int:
    """Schedule until nothing more can happen; backoff waits are skipped by moving the clock. Returns cycles run."""
    await scheduler.cache.synced.wait()
    limit = max_cycles if max_cycles is not None else 50 * max(len(scheduler.queue), 1) + 1000
    cycles = 0
    while cycles < limit:
        entry = scheduler.queue.pop()
        if entry is not None:
            cycles += 1
            await scheduler.schedule_one(entry)
            if cycles % 64 == 0:
                await asyncio.sleep(0)  # let bindings run now and then, as between watch events
            continue
        if not scheduler.idle():
            await asyncio.sleep(0)
            continue
        expiry = scheduler.queue.next_backoff_expiry()
        if expiry is None:
            break
        clock.advance_to(expiry)
    await scheduler.drain()
    return cycles


@dataclass(frozen=True)
class Decision:
    """One pending pod decided on a snapshot: where it went (or the nomination and the FailedScheduling
    message), every node that passes Filter, and the feasible nodes of the highest score (ties)."""

    node: str | None
    nominated: str | None
    message: str
    feasible: tuple[str, ...]
    best: tuple[str, ...]
    victims: tuple[str, ...]


async def decide(
    build: Callable[[Callable[[str], Handle]], Built],
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    namespaces: Sequence[Namespace] = (),
    pdbs: Sequence[PodDisruptionBudget] = (),
    default_selector: DefaultSelector | None = None,
) -> Decision:
    """The one pending pod of ``pods`` through a fresh scheduler on these objects, as `--cluster` would
    schedule it (its first attempt: preemption nominates, the victims are evicted); the feasible set is
    Filter over every node and the best set the scores of the full cycle, both before the attempt."""
    cluster = MemoryCluster(nodes, pods, pdbs, namespaces)
    scheduler = Scheduler(
        ClusterCache(), cluster, build, clock=ManualClock(), batching=False, default_selector=default_selector
    )
    cluster.attach(scheduler)
    entry = scheduler.queue.pop()
    if entry is None:
        raise ValueError("no pending pod of a configured profile in the snapshot")
    profile = scheduler.built.profiles[entry.profile]
    fw, pod, table = profile.framework, entry.info, scheduler.cache.table
    state = CycleState()
    pre = fw.run_pre_filter(state, pod, table)
    feasible: list[str] = []
    best: list[str] = []
    if not pre.status.rejected and len(table):
        rows, _ = find(profile, state, pod, table, pre, Diagnosis(), NoExtenders(), 100, 0)
        feasible = table.name_array()[rows].tolist()
        if len(rows) > 1:
            batch = NodeBatch(table, rows)
            fw.run_pre_score(state, pod, batch)
            totals = fw.run_score(state, pod, batch).totals
            best = [feasible[i] for i in range(len(rows)) if totals[i] == totals.max()]
        else:
            best = list(feasible)
    await scheduler.schedule_one(entry)
    await scheduler.drain()
    after = cluster.pods.get(pod.uid)
    condition = cluster.conditions.get(pod.key)
    return Decision(
        node=after.spec.node_name or None if after is not None else None,
        nominated=after.status.nominated_node_name or None if after is not None else None,
        message=condition[1] if condition is not None else "",
        feasible=tuple(sorted(feasible)),
        best=tuple(sorted(best)),
        victims=tuple(sorted(e.regarding for e in cluster.events if e.reason == "Preempted")),
    )


def decode_snapshot(snapshot: Mapping[str, Sequence[Mapping[str, Any]]]) -> Snapshot:
    """Objects as the API server lists them (already defaulted), by kind (``nodes``, ``pods``, ``namespaces``,
    ``services``, ``pdbs``; each optional), as the wire models and the Services' selectors."""
    workloads = Workloads()
    workloads.services.replace([msgspec.convert(s, Service) for s in snapshot.get("services", ())])
    return Snapshot(
        [msgspec.convert(n, Node) for n in snapshot.get("nodes", ())],
        [msgspec.convert(p, Pod) for p in snapshot.get("pods", ())],
        [msgspec.convert(n, Namespace) for n in snapshot.get("namespaces", ())],
        workloads,
        [msgspec.convert(b, PodDisruptionBudget) for b in snapshot.get("pdbs", ())],
    )


@dataclass
class Snapshot:
    """A cluster's objects, decoded."""

    nodes: list[Node]
    pods: list[Pod]
    namespaces: list[Namespace]
    workloads: Workloads = field(default_factory=Workloads)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)


SnapshotDecider = Callable[[str, Mapping[str, Sequence[Mapping[str, Any]]]], Decision]


def snapshot_decider(config: Mapping[str, Any] | None = None, release: Release = REFERENCE) -> SnapshotDecider:
    """``decide(scheduler_name, snapshot)`` on objects as the API server lists them (see `decode_snapshot`),
    with one profile ``scheduler_name`` (the defaults, ``config``'s top-level keys laid over them), following
    ``release``."""
    loaded: dict[str, Loaded] = {}

    def run(name: str, snapshot: Mapping[str, Sequence[Mapping[str, Any]]]) -> Decision:
        if name not in loaded:
            loaded[name] = load(
                parse(
                    {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "KubeSchedulerConfiguration",
                        **(config or {}),
                        "profiles": [{"schedulerName": name}],
                    }
                ),
                release=release,
            )
        got = decode_snapshot(snapshot)
        build = loaded[name].build
        return asyncio.run(
            decide(
                build, got.nodes, got.pods, got.namespaces, got.pdbs, default_selector=got.workloads.default_selector
            )
        )

    return run
