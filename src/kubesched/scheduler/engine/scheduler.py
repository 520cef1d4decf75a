"""The scheduler: cluster events in, one pod per cycle out, bindings off the scheduling path.

    cluster source ──events──> Scheduler.node_* / pod_*  ──> ClusterCache + SchedulingQueue
                                                              │
    run(): pop ─> Cycle (filter, score, assume, reserve, permit) ─> Binder task (bind, post-bind)
                   └─ failure: requeue, report (condition + event), preemption's evictions in the background

The watch of the API server and the in-memory cluster of `--cluster FILE` call the same event
methods. Nothing is decided before the cache's first sync. A configuration reload swaps the
profiles between two cycles. The event methods are in events.py, failure handling in failures.py
(both bases of `Scheduler`, over the state declared in state.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.cluster.cache import ClusterCache
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.guard import FrameworkError
from kubesched.framework.handle import DefaultSelector, ResourceAPI
from kubesched.framework.interfaces import (
    CycleState,
    Handle,
)
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SUCCESS, Status
from kubesched.framework.volumes import Volumes
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.binding import Binder, WaitingPods
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.engine.cycle import Cycle
from kubesched.scheduler.engine.decision import Decision, Rejection
from kubesched.scheduler.engine.events import ClusterEvents
from kubesched.scheduler.engine.extenders import Candidates, Extenders, ExtendersFactory, no_extenders
from kubesched.scheduler.engine.failures import Failures
from kubesched.scheduler.engine.hints import QueueingHints
from kubesched.scheduler.engine.nominator import Nominator
from kubesched.scheduler.engine.state import log
from kubesched.scheduler.engine.unknown import DEFAULT_TTL as DEFAULT_UNKNOWN_TTL
from kubesched.scheduler.engine.unknown import UnknownBindings
from kubesched.scheduler.engine.writer import ClusterWriter
from kubesched.scheduler.metrics import CODE_TEXT, SchedulerMetrics


class Scheduler(ClusterEvents, Failures):
    """One scheduler over one cache, with the profiles of one configuration (swappable).

    ``build`` turns a handle factory into a configuration (the CLI's `builder`, `build_default`);
    it may raise ConfigurationError. `apply` swaps in a later one built with `make_handle`. ``cluster`` is where
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
        volumes: Volumes | None = None,
        resources: ResourceAPI | None = None,
    ) -> None:
        self.cache = cache
        self.volumes = volumes  # PVs, PVCs, StorageClasses, CSINodes for the volume plugins (None: untracked)
        # Pods whose binding's answer was lost, still counted on their node until known (unknown.py).
        self._uncertain = UnknownBindings(cluster.bound_node, self._settled, binding_unknown_ttl)
        self._sort_errors: dict[str, FrameworkError] = {}  # pods whose QueueSort key raised, by UID
        self._default_selector = default_selector
        self.resources = resources  # dynamic resource allocation's objects (DynamicResources reads them)
        self._make_extenders = extenders
        self.cluster = cluster
        self.metrics = metrics or SchedulerMetrics()
        self.waiting = WaitingPods()
        self.nominator = Nominator()
        # Plugins get their handle while the configuration is built: hence a builder, not a Built.
        self.built = built = build(self.make_handle)
        self.extenders: Extenders = extenders(built.config.extenders)
        self._wakeup = asyncio.Event()
        self.hints = QueueingHints(lambda: cache.table, self.metrics.queueing_hints.observe)
        self.hints.register(built.profiles)
        self.queue = q.SchedulingQueue(
            clock=clock,
            pre_enqueue=self._pre_enqueue,
            interested=self.hints,
            initial_backoff=built.config.pod_initial_backoff_seconds,
            max_backoff=built.config.pod_max_backoff_seconds,
            notify=self._wakeup.set,
            gate_interested=self.hints.gate,
        )
        self.queue.sort_key = self._sort_key(built)
        for profile in built.profiles.values():  # the release's spelling of a pending pod's events
            self.queue.unscheduled = profile.handle.release.unscheduled_pod
        self.cycle = Cycle(
            cache,
            extenders=self.extenders,
            nominator=self.nominator,
            percentage_of_nodes_to_score=built.config.percentage_of_nodes_to_score,
            rng=rng,
            batching=batching,
            record=self.metrics.extension_points.observe,
            record_plugin=self.metrics.plugin,
            algorithm=lambda seconds: self.metrics.algorithm.observe((), seconds),
            batch_timing=self.metrics.batch_timing,
        )
        self.binder = Binder(
            cluster,
            lambda: self.extenders,
            self.waiting,
            self._bound,
            bind_concurrency,
            self.metrics.extension_points.observe,
            lambda code, seconds: self.metrics.permit_wait.labels(CODE_TEXT[code]).observe(seconds),
        )
        self.metrics.follow_queue(self.queue.pending, self.queue.incoming, self.queue.unschedulable_by_plugin)
        self.metrics.follow_batches(self.cycle.batch_counts)
        self.metrics.follow_scheduler(
            self.cache.sizes, lambda: len(self.binder), self.queue.in_flight, self._evaluations
        )
        self.placements = {}  # by pod key, for the embedded default's report
        self._foreign = {}  # pending pods of other schedulers, kept for a reload
        self._background = set()
        self._binding = {}  # pods in their binding cycle
        self._stopping = False
        self.scheduling = asyncio.Event()  # set while the loop runs (the leader, once synced)

    # ---- profiles ---------------------------------------------------------------------------------------

    def _evaluations(self) -> list[tuple[str, Mapping[tuple[str, str], int]]]:
        """Each profile's plugin evaluation counts (its framework keeps them; a reload starts them anew)."""
        return [(name, profile.framework.evaluations) for name, profile in self.built.profiles.items()]

    def make_handle(self, scheduler_name: str) -> Handle:
        """The handle a profile's plugins get: the cluster and what the scheduler offers them."""
        return Handle(
            scheduler_name=scheduler_name,
            cluster=self.cluster,
            nominator=self.nominator,
            waiting_pods=self.waiting,
            preempt_extenders=self._preempt_extenders,
            default_selector=self._default_selector,
            volumes=self.volumes,
            resources=self.resources,
        )

    def _preempt_extenders(self, pod: PodInfo, candidates: Candidates) -> Candidates:
        """DefaultPreemption's candidates, trimmed by the extenders of the moment (a reload may replace them)."""

        def pods_on(node: str) -> Mapping[str, PodInfo]:
            table = self.cache.table
            row = table.index.get(node)
            return table.pods_on(row) if row is not None else {}

        return self.extenders.preempt(pod, candidates, pods_on)

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
                return self._guarded_key(profile.framework)
        return q.priority_then_arrival

    def _guarded_key(self, fw: Framework) -> q.SortKey:
        """The QueueSort plugin's key; a pod whose key raises sorts last and its next attempt fails with the error."""
        key = fw.queue_sort_key

        def guarded(pod: PodInfo, queued_at: float) -> tuple[Any, ...]:
            try:
                return (0, key(pod, queued_at))
            except FrameworkError as err:
                self._sort_errors[pod.uid] = err
                return (1, -pod.priority, queued_at)

        return guarded

    def _pre_enqueue(self, entry: q.QueuedPod) -> Status:
        """PreEnqueue plugins in order, timed as upstream's queue does (plugins: a 10 % sample)."""
        began = time.perf_counter()
        timer = self.metrics.plugin if self.cycle.sampled() else None
        profile = self.built.profiles.get(entry.profile)
        status = SUCCESS
        if profile is not None:
            try:
                status = profile.framework.run_pre_enqueue(entry.info, timer)
            except FrameworkError as failure:  # the queue backs the pod off and asks again
                self._plugin_failed(entry.profile, failure)
                status = failure.status
        self.metrics.extension_points.observe(("PreEnqueue", status.code, entry.profile), time.perf_counter() - began)
        return status

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
            out = Rejection(pod, CycleState(), Status.error(message), message)
            self.metrics.attempt("error", profile.name, time.perf_counter() - started)
            self._failed(profile, entry, out)

    async def _schedule(self, entry: q.QueuedPod, profile: Profile, started: float) -> None:
        pod = entry.info
        if self._sort_errors:
            failure = self._sort_errors.pop(pod.uid, None)
            if failure is not None:
                self._plugin_failed(profile.name, failure)
                self.metrics.attempt("error", profile.name, time.perf_counter() - started)
                self._failed(profile, entry, Rejection.failed(pod, CycleState(), failure))
                return
        decided = await self.cycle.run(profile, pod)
        if isinstance(decided, Decision):
            self.queue.done(pod.uid)
            self._binding[pod.uid] = entry
            self.binder.start(profile, decided, entry, started)  # its completion reports the e2e latency
            return
        out = decided
        if out.failure is not None:
            self._plugin_failed(profile.name, out.failure)
        result = "error" if out.error else "unschedulable"
        self.metrics.attempt(result, profile.name, time.perf_counter() - started)
        self._failed(profile, entry, out)
