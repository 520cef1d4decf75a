"""The scheduler: cluster events in, one pod per cycle out, bindings off the scheduling path.

    cluster source ──events──> Scheduler.node_* / pod_*  ──> ClusterCache + SchedulingQueue
                                                              │
    run(): pop ─> Cycle (filter, score, assume, reserve, permit) ─> Binder task (bind, post-bind)
                   └─ failure: requeue, report (condition + event), preemption's evictions in the background

The watch of the API server and the in-memory cluster of `--cluster FILE` call the same event
methods. Nothing is decided before the cache's first sync. A configuration reload swaps the
profiles between two cycles.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.config.model import DEFAULT_SCHEDULER_NAME
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.guard import FrameworkError, plugin_error, timed
from kubesched.framework.handle import DefaultSelector
from kubesched.framework.interfaces import (
    AlreadyAssignedError,
    BindingUnknownError,
    CycleState,
    Handle,
    PostFilterPlugin,
    QueueSortPlugin,
)
from kubesched.framework.status import SUCCESS, Status
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.binding import Binder, WaitingPods
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.engine.cycle import Cycle, Outcome, unreserve
from kubesched.scheduler.engine.extenders import Candidates, Extenders, ExtendersFactory, no_extenders
from kubesched.scheduler.engine.hints import QueueingHints
from kubesched.scheduler.engine.nominator import Nominator
from kubesched.scheduler.engine.unknown import DEFAULT_TTL as DEFAULT_UNKNOWN_TTL
from kubesched.scheduler.engine.unknown import Unknown, UnknownBindings
from kubesched.scheduler.engine.writer import SCHEDULER_ERROR, UNSCHEDULABLE, ClusterWriter
from kubesched.scheduler.metrics import SchedulerMetrics

log = logging.getLogger("kubesched.scheduler")
V2 = 15  # kube-scheduler's V(2): details an operator turns on with -v 2
_TERMINAL = ("Succeeded", "Failed")


@dataclass(slots=True)
class Placement:
    """Where a pod went, or why it did not (the embedded default prints these)."""

    pod: str
    node: str | None = None
    reason: str | None = None


class Scheduler:
    """One scheduler over one cache, with the profiles of one configuration (swappable).

    ``build`` turns a handle factory into a configuration (`Loaded.build` of profiles/manager.py, `build_default`);
    it may raise ConfigError. `apply` swaps in a later one built with `make_handle`. ``cluster`` is where
    pods are bound and reports go (the plugins' `handle.cluster` too); ``extenders`` makes the configured
    extenders' client (`remote.extenders.ExtenderSet`; without it, a configuration naming some is refused);
    ``default_selector`` feeds PodTopologySpread's default constraints (`cluster.workloads`).
    """

    def __init__(
        self,
        cache: ClusterCache,
        cluster: ClusterWriter,
        build: Callable[[Callable[[str], Handle]], Built],
        *,
        clock: q.Clock | None = None,
        rng: random.Random | None = None,
        metrics: SchedulerMetrics | None = None,
        bind_concurrency: int = 256,
        batching: bool = True,
        extenders: ExtendersFactory = no_extenders,
        default_selector: DefaultSelector | None = None,
        binding_unknown_ttl: float = DEFAULT_UNKNOWN_TTL,
    ) -> None:
        self.cache = cache
        # Pods whose binding's answer was lost, still counted on their node until known (unknown.py).
        self._uncertain = UnknownBindings(cluster.bound_node, self._settled, binding_unknown_ttl)
        self._sort_errors: dict[str, FrameworkError] = {}  # pods whose QueueSort key raised, by UID
        self._default_selector = default_selector
        self._make_extenders = extenders
        self.cluster = cluster
        self.metrics = metrics or SchedulerMetrics()
        self.waiting = WaitingPods()
        self.nominator = Nominator()
        # Plugins get their handle while the configuration is built: hence a builder, not a Built.
        self.built = built = build(self.make_handle)
        self.extenders: Extenders = extenders(built.config.extenders)
        self._wakeup = asyncio.Event()
        self.hints = QueueingHints(lambda: cache.table)
        self.hints.register(built.profiles)
        self.queue = q.SchedulingQueue(
            clock=clock,
            pre_enqueue=self._pre_enqueue,
            interested=self.hints,
            initial_backoff=built.config.pod_initial_backoff_seconds,
            max_backoff=built.config.pod_max_backoff_seconds,
            notify=self._wakeup.set,
        )
        self.queue.sort_key = self._sort_key(built)
        self.cycle = Cycle(
            cache,
            extenders=self.extenders,
            nominator=self.nominator,
            percentage_of_nodes_to_score=built.config.percentage_of_nodes_to_score,
            rng=rng,
            batching=batching,
            record=self.metrics.extension_points.observe,
            record_plugin=self.metrics.plugin,
        )
        self.binder = Binder(
            cluster,
            lambda: self.extenders,
            self.waiting,
            self._bound,
            bind_concurrency,
            self.metrics.extension_points.observe,
        )
        self.metrics.follow_queue(self.queue.pending, self.queue.incoming, self.queue.unschedulable_by_plugin)
        self.metrics.follow_batches(self.cycle.batch_counts)
        self.placements: dict[str, Placement] = {}  # by pod key, for the embedded default's report
        self._foreign: dict[str, Pod] = {}  # pending pods of other schedulers, kept for a reload
        self._background: set[asyncio.Task[Any]] = set()
        self._binding: dict[str, q.QueuedPod] = {}  # pods in their binding cycle
        self._stopping = False
        self.scheduling = asyncio.Event()  # set while the loop runs (the leader, once synced)

    # ---- profiles ---------------------------------------------------------------------------------------

    def make_handle(self, scheduler_name: str) -> Handle:
        """The handle a profile's plugins get: the cluster and what the scheduler offers them."""
        return Handle(
            scheduler_name=scheduler_name,
            cluster=self.cluster,
            nominator=self.nominator,
            waiting_pods=self.waiting,
            preempt_extenders=self._preempt_extenders,
            default_selector=self._default_selector,
        )

    def _preempt_extenders(self, pod: PodInfo, candidates: Candidates) -> Candidates:
        """DefaultPreemption's candidates, trimmed by the extenders of the moment (a reload may replace them)."""

        def pods_on(node: str) -> Mapping[str, PodInfo]:
            table = self.cache.table
            row = table.index.get(node)
            return table.pods_on(row) if row is not None else {}

        return self.extenders.preempt(pod, candidates, pods_on)

    def profile_for(self, pod: Pod) -> str:
        return pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME

    def apply(self, built: Built) -> None:
        """Swap in a new configuration between two cycles (its handles must come from `make_handle`)."""
        old = self.built
        self.built = built
        if built.config.extenders != old.config.extenders:
            stale = self.extenders
            self.extenders = self._make_extenders(built.config.extenders)
            self.cycle.extenders = self.extenders
            self._spawn(stale.aclose())
        self.cycle.percentage = built.config.percentage_of_nodes_to_score
        self.queue.initial_backoff = built.config.pod_initial_backoff_seconds
        self.queue.max_backoff = built.config.pod_max_backoff_seconds
        self.queue.resort(self._sort_key(built))
        self.hints.register(built.profiles)
        for entry in self.queue.entries():
            if entry.profile not in built.profiles:
                self.queue.delete(entry.info.uid)
                self._foreign[entry.info.uid] = entry.info.pod
        for uid, pod in list(self._foreign.items()):
            if self.profile_for(pod) in built.profiles:
                del self._foreign[uid]
                self.queue.add(self.cache.compile(pod), self.profile_for(pod))
        self.queue.recheck_gates()
        for key in ("leader_election", "kubeconfig", "qps", "burst"):
            if getattr(built.config, key) != getattr(old.config, key):
                log.warning("configuration: a change of %s takes effect only after a restart", key)
        log.info("profiles now: %s", ", ".join(built.profiles))

    def _sort_key(self, built: Built) -> q.SortKey:
        for profile in built.profiles.values():
            if profile.framework.queue_sort:
                return self._guarded_key(profile.framework.queue_sort[0])
        return q.priority_then_arrival

    def _guarded_key(self, plugin: QueueSortPlugin) -> q.SortKey:
        """The plugin's sort key; a pod whose key raises sorts last and its next attempt fails with the error."""
        key = plugin.sort_key

        def guarded(pod: PodInfo, queued_at: float) -> tuple[Any, ...]:
            try:
                return (0, key(pod, queued_at))
            except Exception as err:
                self._sort_errors[pod.uid] = plugin_error("QueueSort", plugin, pod, err)
                return (1, -pod.priority, queued_at)

        return guarded

    def _pre_enqueue(self, entry: q.QueuedPod) -> Status:
        """PreEnqueue plugins in order, timed as upstream's queue does (plugins: a 10 % sample)."""
        began = time.perf_counter()
        timer = self.metrics.plugin if self.cycle.sampled() else None
        profile = self.built.profiles.get(entry.profile)
        status = SUCCESS
        for plugin in profile.framework.pre_enqueue if profile else ():
            try:
                if timer is None:
                    status = plugin.pre_enqueue(entry.info)
                else:
                    status = timed(timer, plugin.name, "PreEnqueue", plugin.pre_enqueue, entry.info)
            except Exception as err:  # the queue backs the pod off and asks again
                failure = plugin_error("PreEnqueue", plugin, entry.info, err)
                self._plugin_failed(entry.profile, failure)
                status = failure.status
                break
            if not status.ok:
                status = status.with_plugin(plugin.name)
                break
        self.metrics.extension_points.observe(("PreEnqueue", status.code, entry.profile), time.perf_counter() - began)
        return status

    def _plugin_failed(self, profile: str, err: FrameworkError) -> None:
        self.metrics.plugin_error(profile, err.status.plugin, err.point)

    # ---- cluster events (the watch and the in-memory cluster call these) ----------------------------

    def node_upserted(self, node: Node) -> None:
        row = self.cache.table.index.get(node.metadata.name)
        old = self.cache.table.nodes[row] if row is not None else None
        self.cache.upsert_node(node)
        row = self.cache.table.index.get(node.metadata.name)
        if old is None:
            self.queue.on_event(q.NODE_ADD, row)
        elif (old.metadata.labels, old.spec, old.status.allocatable) != (
            node.metadata.labels,
            node.spec,
            node.status.allocatable,
        ):
            self.queue.on_event(q.NODE_UPDATE, row)

    def node_deleted(self, node: Node) -> None:
        self.cache.delete_node(node.metadata.name)

    def nodes_replaced(self, nodes: list[Node]) -> None:
        self.cache.replace_nodes(nodes)
        self.queue.on_event(q.NODE_ADD)

    def pod_upserted(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        if pod.spec.node_name or pod.status.phase in _TERMINAL:
            was = self.cache.pod_node(uid)
            before = self.cache.pod(uid) if was is not None else None
            self.cache.upsert_pod(pod)
            if uid in self._uncertain:
                self._uncertain.settle(uid, pod.spec.node_name or None)
            self._forget_pending(uid)
            if pod.status.phase in _TERMINAL:
                if was is not None:
                    self.queue.on_event(q.POD_DELETE, pod=self.cache.compile(pod))
            elif was is None:
                self.queue.on_event(q.POD_ADD, pod=self.cache.compile(pod))
            elif before is not None and _scaled_down(before, self.cache.pod(uid)):
                self.queue.on_event(q.POD_UPDATE, pod=self.cache.compile(pod))  # an in-place resize freed room
            return
        if self.cache.is_assumed(uid):
            return  # ours, its binding is in flight
        if pod.metadata.deletion_timestamp:
            self._forget_pending(uid)
            return
        name = self.profile_for(pod)
        if name not in self.built.profiles:
            self._foreign[uid] = pod
            self.queue.delete(uid)
            return
        entry = self.queue.get(uid)
        if entry is not None and not _changed(entry.info.pod, pod):
            return  # only the status moved (our own condition patch, for one)
        self.queue.add(self.cache.compile(pod), name)
        self.placements.setdefault(_key(pod), Placement(_key(pod)))

    def pod_deleted(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        was = self.cache.pod_node(uid)
        self.cache.delete_pod(uid)
        if uid in self._uncertain:
            self._uncertain.settle(uid, None)
        self._forget_pending(uid)
        waiting = self.waiting.get(uid)
        if waiting is not None:
            waiting.reject("", "pod deleted")
        if was is not None:
            self.queue.on_event(q.POD_DELETE, pod=self.cache.compile(pod))

    def pods_replaced(self, pods: list[Pod]) -> None:
        """After a (re)list: the cache holds exactly these; queued pods that vanished are dropped."""
        self.cache.replace_pods(pods)
        seen = set()
        for pod in pods:
            seen.add(pod.metadata.uid)
            if not pod.spec.node_name:
                self.pod_upserted(pod)
        for entry in self.queue.entries():
            if entry.info.uid not in seen:
                self.queue.delete(entry.info.uid)
        self._foreign = {u: p for u, p in self._foreign.items() if u in seen}
        self.queue.on_event(q.POD_DELETE)

    def _forget_pending(self, uid: str) -> None:
        self.queue.delete(uid)
        self._binding.pop(uid, None)
        self.nominator.remove(uid)
        self._foreign.pop(uid, None)

    # ---- the loop ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Schedule until `stop`; decisions start only after the cache's first sync."""
        await self.cache.synced.wait()
        self.scheduling.set()
        self.metrics.leader.set(1)
        try:
            while not self._stopping:
                entry = self.queue.pop()
                if entry is None:
                    await self._idle()
                    continue
                try:
                    await self.schedule_one(entry)
                except Exception:  # schedule_one fails the pod itself; this is the last line of defence
                    log.exception("scheduling %s failed", entry.info.key)
                # Let watch events and bindings in between two cycles.
                await asyncio.sleep(0)
        finally:
            self.scheduling.clear()
            self.metrics.leader.set(0)

    async def _idle(self) -> None:
        self._wakeup.clear()
        expiry = self.queue.next_backoff_expiry()
        timeout = 1.0 if expiry is None else min(1.0, max(0.0, expiry - self.queue.clock.now()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout)

    def stop(self) -> None:
        self._stopping = True
        self._wakeup.set()

    def idle(self) -> bool:
        """Nothing left to try now: no active pod, nothing binding, nothing evicting."""
        pending = self.queue.pending()
        return not pending[q.ACTIVE] and not len(self.binder) and not self._background

    async def drain(self) -> None:
        """Graceful shutdown: finish bindings and evictions in flight (not the reads of pods whose
        binding's answer was lost: the next scheduler sees them as they are)."""
        await self.binder.drain()
        await self._uncertain.aclose()
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self.extenders.aclose()

    async def schedule_one(self, entry: q.QueuedPod) -> None:
        """One pod's scheduling cycle; whatever goes wrong fails this pod (Error, backoff), never the loop."""
        pod = entry.info
        profile = self.built.profiles.get(entry.profile)
        if profile is None:
            self.queue.delete(pod.uid)
            return
        started = time.perf_counter()
        try:
            await self._schedule(entry, profile, started)
        except Exception as err:
            log.exception("scheduling %s failed", pod.key)
            if self.cache.is_assumed(pod.uid) and pod.uid not in self._binding:
                self.cache.forget(pod.uid)
            if pod.uid in self._binding:
                return  # its binding cycle started: it reports
            message = f"scheduling cycle failed: {type(err).__name__}: {err}"
            out = Outcome(pod, CycleState(), status=Status.error(message), message=message)
            self.metrics.attempt("error", profile.name, time.perf_counter() - started)
            self._failed(profile, entry, out)

    async def _schedule(self, entry: q.QueuedPod, profile: Profile, started: float) -> None:
        pod = entry.info
        if self._sort_errors:
            failure = self._sort_errors.pop(pod.uid, None)
            if failure is not None:
                out = Outcome(pod, CycleState(), status=failure.status, message=str(failure), failure=failure)
                self._plugin_failed(profile.name, failure)
                self.metrics.attempt("error", profile.name, time.perf_counter() - started)
                self._failed(profile, entry, out)
                return
        out = await self.cycle.run(profile, pod)
        if out.failure is not None:
            self._plugin_failed(profile.name, out.failure)
        if out.node is not None:
            self.queue.done(pod.uid)
            out.queued, out.started = entry, started  # the binding's completion reports the e2e latency
            self._binding[pod.uid] = entry
            self.binder.start(profile, out)
            return
        result = "error" if out.error else "unschedulable"
        self.metrics.attempt(result, profile.name, time.perf_counter() - started)
        self._failed(profile, entry, out)

    def _failed(self, profile: Profile, entry: q.QueuedPod, out: Outcome) -> None:
        pod = out.pod
        previous = self.nominator.node_of(pod.uid) or pod.pod.status.nominated_node_name
        nominated: str | None = None
        if out.nominated:
            nominated = out.nominated
            self.nominator.add(pod, out.nominated)
            self.metrics.preemption_attempts.inc()
            plugin = out.post_filter
            if plugin is not None:
                victims = plugin.victims(out.state)
                if victims is not None:
                    self.metrics.preemption_victims.observe(victims)
                self._spawn(self._after_nomination(plugin, out.state, pod, out.nominated))
        elif previous:
            nominated = ""  # as kube-scheduler: a failed attempt without a new nomination clears it
            self.nominator.remove(pod.uid)
        self.queue.requeue(entry, plugins=out.plugins, error=out.error)
        reason = SCHEDULER_ERROR if out.error else UNSCHEDULABLE
        log.debug("pod %s unschedulable: %s", pod.key, out.message, extra={"pod": pod.key, "profile": profile.name})
        self.placements[pod.key] = Placement(pod.key, None, out.message)
        self.cluster.failed(pod, profile.name, reason, out.message, nominated)

    async def _after_nomination(self, plugin: PostFilterPlugin, state: CycleState, pod: PodInfo, node: str) -> None:
        """Preemption's evictions, off the scheduling path; then the preemptor may be tried again."""
        status = await plugin.after_nomination(state, pod)
        if not status.ok:
            log.warning(
                "preempting for %s on %s failed: %s",
                pod.key,
                node,
                status.message,
                extra={"pod": pod.key, "node": node},
            )
        self.queue.recheck_gates()

    def _bound(self, out: Outcome, status: Status, _seconds: float) -> None:
        pod, node, entry = out.pod, out.node or "", out.queued
        assert entry is not None  # set before the binding cycle started
        profile = self.built.profiles.get(entry.profile)
        name = profile.name if profile else entry.profile
        if out.failure is not None:
            self._plugin_failed(name, out.failure)
        if status.ok:
            self._binding.pop(pod.uid, None)
            self._report_bound(name, out, entry)
            return
        err = out.bind_error
        if isinstance(err, AlreadyAssignedError) and err.node:
            # Bound already (our earlier binding whose answer was lost, or another scheduler's): counted
            # where it is, not requeued, nothing to report.
            self._binding.pop(pod.uid, None)
            log.info("binding %s to %s: %s; counted on %s", pod.key, node, err, err.node)
            self._move_bound(out, err.node)
            return
        seen = self.cache.pod_node(pod.uid)
        if isinstance(err, (BindingUnknownError, AlreadyAssignedError)) and seen and not self.cache.is_assumed(pod.uid):
            # The watch showed it bound before the binding's answer came.
            self._binding.pop(pod.uid, None)
            if seen == node:
                self._report_bound(name, out, entry)
            else:
                self._move_bound(out, seen)
            return
        if isinstance(err, (BindingUnknownError, AlreadyAssignedError)) and pod.uid in self._binding:
            # The server may have applied it: the pod stays counted on the node until we know.
            log.warning("binding %s to %s: %s; kept on the node until its state is known", pod.key, node, err)
            self._uncertain.add(pod, node, name, status.message, (out, entry))
            return
        still_pending = self._binding.pop(pod.uid, None) is not None
        self.metrics.attempt("error", name, time.perf_counter() - out.started)
        fields = {"pod": pod.key, "node": node, "profile": name, "plugin": status.plugin}
        log.warning("binding %s to %s failed: %s", pod.key, node, status.message, extra=fields)
        self._binding_failed(profile, out, entry, status, still_pending)

    def _report_bound(self, profile: str, out: Outcome, entry: q.QueuedPod) -> None:
        pod, node = out.pod, out.node or ""
        self.metrics.attempt("scheduled", profile, time.perf_counter() - out.started)
        self.metrics.scheduled(entry.attempts, self.queue.clock.now() - entry.first_queued_at)
        self.placements[pod.key] = Placement(pod.key, node, None)
        log.log(V2, "Successfully bound pod to node", extra={"pod": pod.key, "node": node, "profile": profile})
        self.cluster.scheduled(pod, node, profile)

    def _binding_failed(
        self, profile: Profile | None, out: Outcome, entry: q.QueuedPod, status: Status, requeue: bool
    ) -> None:
        """kube-scheduler's handleBindingCycleError: Unreserve, forget, move the pods this one's room
        turned away (an assigned pod deleted), requeue it and report."""
        pod, node = out.pod, out.node or ""
        if profile is not None:
            unreserve(profile.framework, out.state, pod, node, self.metrics.extension_points.observe)
        self.cache.forget(pod.uid)
        rejected = status.rejected  # a Permit rejection is a rejection, anything else an error
        self.placements[pod.key] = Placement(pod.key, None, status.message)
        requeue = requeue and self.cache.pod_node(pod.uid) is None  # unless the watch saw it bound or deleted
        if not rejected:
            self.queue.on_event(q.POD_DELETE, pod=pod)
        if requeue:
            self.queue.add_failed(entry, plugins=frozenset({status.plugin}), error=not rejected)
        if rejected:  # after the requeue, as upstream defers it: the pod itself stays where it went
            self.queue.on_event(q.POD_DELETE, pod=pod, skip=pod.uid)
        name = profile.name if profile else entry.profile
        self.cluster.failed(pod, name, UNSCHEDULABLE if rejected else SCHEDULER_ERROR, status.message, None)

    def _move_bound(self, out: Outcome, where: str) -> None:
        """The pod is bound to ``where`` (maybe not the node it was assumed on): counted there."""
        pod, node = out.pod, out.node or ""
        profile = self.built.profiles.get(out.queued.profile) if out.queued else None
        if where != node and profile is not None:
            unreserve(profile.framework, out.state, pod, node, self.metrics.extension_points.observe)
        if self.cache.is_assumed(pod.uid) or self.cache.pod_node(pod.uid) is None:
            obj = pod.pod
            self.cache.upsert_pod(msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.spec, node_name=where)))
        self._forget_pending(pod.uid)
        self.placements[pod.key] = Placement(pod.key, where, None)
        if where != node:
            self.queue.on_event(q.POD_DELETE, pod=pod)  # its room on the node it was assumed on is free

    def _settled(self, u: Unknown, where: str | None) -> None:
        """What became of a pod whose binding's answer was lost: bound to ``where``, not bound (''), or
        gone (None). The watch (the cache already has it) or a read of the pod told."""
        out, entry = u.context
        uid, node = u.pod.uid, u.node
        profile = self.built.profiles.get(entry.profile)
        if where == node:
            log.info("binding %s to %s: confirmed after its answer was lost", out.pod.key, node)
            self._binding.pop(uid, None)
            self._report_bound(u.profile, out, entry)
        elif where:
            self._binding.pop(uid, None)
            self._move_bound(out, where)
        elif where is None:
            self._binding.pop(uid, None)
            if profile is not None:
                unreserve(profile.framework, out.state, out.pod, node, self.metrics.extension_points.observe)
            self.cache.forget(uid)
            self.queue.on_event(q.POD_DELETE, pod=out.pod)
        else:
            still_pending = self._binding.pop(uid, None) is not None
            self.metrics.attempt("error", u.profile, time.perf_counter() - out.started)
            message = f"{u.message}; the pod is not bound"
            self._binding_failed(profile, out, entry, Status.error(message).with_plugin("DefaultBinder"), still_pending)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.warning("background task failed: %s", t.exception())

        task.add_done_callback(done)


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _changed(old: Pod, new: Pod) -> bool:
    """Whether a pending pod changed in a way that may change its scheduling (not just its status)."""
    return (
        old.spec != new.spec
        or old.metadata.labels != new.metadata.labels
        or old.metadata.annotations != new.metadata.annotations
        or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
    )


def _scaled_down(before: PodInfo, after: PodInfo | None) -> bool:
    """Whether a bound pod now counts less of some resource (kube-scheduler's UpdatePodScaleDown)."""
    if after is None:
        return False
    now = after.requests
    return any(now.get(name, 0) < amount for name, amount in before.requests.items())
