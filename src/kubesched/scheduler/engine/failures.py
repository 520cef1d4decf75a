"""What the scheduler does when an attempt or a binding fails, and when a lost binding's outcome is known.

`_failed`: an unschedulable or failed attempt (nomination, preemption's evictions off the scheduling path,
requeue, report); `_bound`: a binding cycle's end (success, a pod already bound, an answer lost — kept
counted on its node until `_settled` learns where it is —, or kube-scheduler's handleBindingCycleError).
"""

from __future__ import annotations

import time

import msgspec

from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.interfaces import AlreadyAssignedError, BindingUnknownError, CycleState, PostFilterPlugin
from kubesched.framework.status import Status
from kubesched.scheduler.engine import queue as q
from kubesched.scheduler.engine.binding import Binding
from kubesched.scheduler.engine.cycle import NO_NODES, unreserve
from kubesched.scheduler.engine.decision import Rejection
from kubesched.scheduler.engine.state import Placement, SchedulerState, log
from kubesched.scheduler.engine.unknown import Unknown
from kubesched.scheduler.engine.writer import SCHEDULER_ERROR, UNSCHEDULABLE

V2 = 15  # kube-scheduler's V(2): details an operator turns on with -v 2


class Failures(SchedulerState):
    """Failed attempts, the end of binding cycles, and lost bindings settled."""

    def _failed(self, profile: Profile, entry: q.QueuedPod, out: Rejection) -> None:
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
        # kube-scheduler's handleSchedulingFailure: a rejection at V(2), an error (when retried) as an error.
        if out.message == NO_NODES:
            log.log(
                V2, "Unable to schedule pod; no nodes are registered to the cluster; waiting", extra={"pod": pod.key}
            )
        elif not out.error:
            log.log(V2, "Unable to schedule pod; no fit; waiting", extra={"pod": pod.key, "err": out.message})
        elif self.queue.retry_errors:
            log.error("Error scheduling pod; retrying", extra={"pod": pod.key, "err": out.message})
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

    def _bound(self, out: Binding, status: Status, _seconds: float) -> None:
        pod, node, entry = out.pod, out.node, out.queued
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
            self._uncertain.add(pod, node, name, status.message, out)
            return
        still_pending = self._binding.pop(pod.uid, None) is not None
        self.metrics.attempt("error", name, time.perf_counter() - out.started)
        fields = {"pod": pod.key, "node": node, "profile": name, "plugin": status.plugin}
        log.warning("binding %s to %s failed: %s", pod.key, node, status.message, extra=fields)
        self._binding_failed(profile, out, entry, status, still_pending)

    def _report_bound(self, profile: str, out: Binding, entry: q.QueuedPod) -> None:
        pod, node = out.pod, out.node
        self.metrics.attempt("scheduled", profile, time.perf_counter() - out.started)
        self.metrics.scheduled(entry.attempts, self.queue.clock.now() - entry.first_queued_at)
        if entry.flushed:
            self.metrics.after_flush.inc()
        self.placements[pod.key] = Placement(pod.key, node, None)
        log.log(V2, "Successfully bound pod to node", extra={"pod": pod.key, "node": node, "profile": profile})
        self.cluster.scheduled(pod, node, profile)

    def _binding_failed(
        self, profile: Profile | None, out: Binding, entry: q.QueuedPod, status: Status, requeue: bool
    ) -> None:
        """kube-scheduler's handleBindingCycleError: Unreserve, forget, move the pods this one's room
        turned away (an assigned pod deleted), requeue it and report."""
        pod, node = out.pod, out.node
        if profile is not None:
            unreserve(profile.framework, out.decision.state, pod, node, self.metrics.extension_points.observe)
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

    def _move_bound(self, out: Binding, where: str) -> None:
        """The pod is bound to ``where`` (maybe not the node it was assumed on): counted there."""
        pod, node = out.pod, out.node
        profile = self.built.profiles.get(out.queued.profile)
        if where != node and profile is not None:
            unreserve(profile.framework, out.decision.state, pod, node, self.metrics.extension_points.observe)
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
        out: Binding = u.context
        entry = out.queued
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
                unreserve(profile.framework, out.decision.state, out.pod, node, self.metrics.extension_points.observe)
            self.cache.forget(uid)
            self.queue.on_event(q.POD_DELETE, pod=out.pod)
        else:
            still_pending = self._binding.pop(uid, None) is not None
            self.metrics.attempt("error", u.profile, time.perf_counter() - out.started)
            message = f"{u.message}; the pod is not bound"
            self._binding_failed(profile, out, entry, Status.error(message).with_plugin("DefaultBinder"), still_pending)
