"""The binding cycle: off the scheduling path, as asyncio tasks with bounded concurrency.

WaitOnPermit → PreBind → Bind (an interested binder extender, else the Bind plugins in order, SKIP
passing to the next) → PostBind. Any failure is returned as a status; the scheduler then unreserves,
forgets the assumed pod and requeues it.

Cycles that cannot await (a Bind plugin that declares `binds_through_cluster`, DefaultBinder, into a
cluster that `binds_inline`, the in-memory one) share one task per turn of the event loop instead of one
task each: a task costs more than such a whole binding cycle.
"""

from __future__ import annotations

import asyncio
import logging
import time
import types
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.guard import FrameworkError
from kubesched.framework.interfaces import AlreadyAssignedError, BindingUnknownError, ClusterAPIError
from kubesched.framework.status import SUCCESS, Code, Status
from kubesched.scheduler.engine.decision import Decision
from kubesched.scheduler.engine.extenders import ExtenderError, Extenders
from kubesched.scheduler.engine.queue import QueuedPod
from kubesched.scheduler.engine.writer import ClusterWriter


@dataclass(eq=False)
class WaitingPod:
    """A pod held at Permit until every waiting plugin allows it, one rejects it, or time runs out."""

    pod: PodInfo
    pending: dict[str, float]  # plugin -> timeout in seconds
    done: asyncio.Future[Status] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def allow(self, plugin: str) -> None:
        self.pending.pop(plugin, None)
        if not self.pending and not self.done.done():
            self.done.set_result(SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        if not self.done.done():
            self.done.set_result(Status.unschedulable(message).with_plugin(plugin))


class WaitingPods:
    """The pods waiting at Permit (the `waiting_pods` service plugins use to allow or reject them)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Any:
        return iter(list(self._pods.values()))

    async def wait(self, pod: PodInfo, waits: Mapping[str, float]) -> Status:
        waiting = WaitingPod(pod, dict(waits))
        self._pods[pod.uid] = waiting
        plugin, timeout = min(waits.items(), key=lambda kv: kv[1])
        try:
            return await asyncio.wait_for(asyncio.shield(waiting.done), timeout)
        except TimeoutError:
            return Status.unschedulable(
                f"rejected due to timeout after waiting {timeout}s at plugin {plugin}"
            ).with_plugin(plugin)
        finally:
            self._pods.pop(pod.uid, None)


@dataclass(eq=False, slots=True)
class Binding:
    """One binding cycle's bookkeeping, owned by the `Binder`: the cycle's decision, the queue's entry and
    when the attempt began (for the end-to-end latency), and what the binding found out."""

    decision: Decision
    queued: QueuedPod
    started: float  # perf_counter when the attempt began
    failure: FrameworkError | None = None  # a plugin's error in the binding cycle (for the metric)
    bind_error: Exception | None = None  # AlreadyAssignedError, BindingUnknownError: the pod may be bound

    @property
    def pod(self) -> PodInfo:
        return self.decision.pod

    @property
    def node(self) -> str:
        return self.decision.node


OnDone = Callable[[Binding, Status, float], None]
Record = Callable[[tuple[str, Code, str], float], None]


def _ignore(key: tuple[str, Code, str], seconds: float) -> None:
    pass


T = TypeVar("T")
_OK = Code.SUCCESS  # an Enum member looked up once: Code.SUCCESS costs ~0.4 µs per access
log = logging.getLogger("kubesched.scheduler")


class Binder:
    """Runs binding cycles as tasks, at most ``concurrency`` at once.

    A binding cycle that cannot await anything (see `_inline`: the in-memory cluster's) needs no task
    of its own: such cycles are batched and run one after another by a single task, at the next turn
    of the event loop, so they stay off the scheduling path all the same. They take no slot either:
    never waiting, they add nothing to the bindings in flight.
    """

    def __init__(
        self,
        cluster: ClusterWriter,
        extenders: Callable[[], Extenders],
        waiting: WaitingPods,
        on_done: OnDone,
        concurrency: int = 256,
        record: Record | None = None,
        permit_wait: Callable[[Code, float], None] | None = None,
    ) -> None:
        self.cluster = cluster
        # (the wait's status code, seconds) of a pod held at Permit: scheduler_permit_wait_duration_seconds.
        self.permit_wait = permit_wait
        # ((extension point, status code, profile), seconds): PreBind, Bind, PostBind as kube-scheduler's.
        self.record = record or _ignore
        self.extenders = extenders
        self.waiting = waiting
        self.on_done = on_done
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._batch: deque[tuple[Profile, Binding]] = deque()  # inline cycles for the next `_flush`
        self._flusher: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._tasks) + len(self._batch)

    def start(self, profile: Profile, decision: Decision, queued: QueuedPod, started: float) -> None:
        """Bind ``decision``'s pod (its attempt began at ``started``); `on_done` gets the `Binding` record."""
        job = Binding(decision, queued, started)
        if self._inline(profile, job):
            self._batch.append((profile, job))
            if self._flusher is None or self._flusher.done():
                self._flusher = self._spawn(self._flush())
            return
        self._spawn(self._run(profile, job))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self) -> None:
        """Wait for every binding in flight (graceful shutdown)."""
        while self._tasks or self._batch:
            if self._batch and (self._flusher is None or self._flusher.done()):
                self._flusher = self._spawn(self._flush())
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _inline(self, profile: Profile, job: Binding) -> bool:
        """Whether the binding cycle runs to its end without awaiting: no Permit wait, no PreBind, no
        binder extender, and the bind goes (as DefaultBinder's does) to a cluster whose bind never awaits."""
        if not self.cluster.binds_inline or job.decision.waits:
            return False
        fw = profile.framework
        if fw.pre_bind and fw.run_pre_bind_pre_flight(job.decision.state, job.pod, job.node):
            return False  # a PreBind plugin with something to do for this pod may await
        if fw.bind:
            first = fw.bind[0]
            if not first.binds_through_cluster or first.handle.cluster is not self.cluster:
                return False
        extenders = self.extenders()
        return not len(extenders) or extenders.binder(job.pod) is None

    async def _flush(self) -> None:
        """Run the batched inline binding cycles, in the order they were started."""
        batch = self._batch
        while batch:
            profile, job = batch.popleft()
            started = time.perf_counter()
            cycle = self.bind_cycle(profile, job)
            try:
                awaited = cycle.send(None)
            except StopIteration as done:
                status: Status = done.value
            except Exception as err:
                status = _failed(err)
            else:
                # It awaited after all (`_inline` was wrong): it goes on as a task of its own (slotless).
                self._spawn(self._finish(job, cycle, awaited, started))
                continue
            try:
                self.on_done(job, status, time.perf_counter() - started)
            except Exception:  # logged, as a task's unretrieved exception would be; the batch goes on
                log.exception("after binding %s", job.pod.key)

    async def _finish(self, job: Binding, cycle: Coroutine[Any, Any, Status], awaited: Any, started: float) -> None:
        """Finish, as a task, a binding cycle that `_flush` ran up to an await (it yielded ``awaited``)."""
        try:
            status = await _resume(cycle, awaited)
        except Exception as err:
            status = _failed(err)
        self.on_done(job, status, time.perf_counter() - started)

    async def _run(self, profile: Profile, job: Binding) -> None:
        started = time.perf_counter()
        async with self._slots:
            try:
                status = await self.bind_cycle(profile, job)
            except Exception as err:
                status = _failed(err)
        self.on_done(job, status, time.perf_counter() - started)

    async def bind_cycle(self, profile: Profile, job: Binding) -> Status:
        fw, state, pod, node = profile.framework, job.decision.state, job.pod, job.node
        if job.decision.waits:
            waited = time.perf_counter()
            status = await self.waiting.wait(pod, job.decision.waits)
            if self.permit_wait is not None:
                self.permit_wait(status.code, time.perf_counter() - waited)
            if not status.ok:
                return status
        record, clock, name = self.record, time.perf_counter, profile.name
        began = clock()
        try:
            status = await fw.run_pre_bind(state, pod, node) if fw.pre_bind else SUCCESS
        except FrameworkError as err:
            job.failure = err
            status = err.status
        binding = clock()
        record(("PreBind", status.code, name), binding - began)
        if not status.ok:
            return status
        status = await self._bind(profile, job)
        done = clock()
        record(("Bind", status.code, name), done - binding)
        if status is not SUCCESS and not status.ok:
            return status
        if fw.post_bind:
            failure = fw.run_post_bind(state, pod, node)  # bound all the same: a plugin's error is only counted
            if failure is not None:
                job.failure = failure
        record(("PostBind", _OK, name), clock() - done)
        return SUCCESS

    async def _bind(self, profile: Profile, job: Binding) -> Status:
        pod, node = job.pod, job.node
        extenders = self.extenders()
        binder = extenders.binder(pod) if len(extenders) else None
        if binder is not None:
            try:
                await binder.bind(pod, node)
                return SUCCESS
            except ExtenderError as err:
                if not binder.config.ignorable:
                    return Status.error(str(err)).with_plugin("Extender")
        plugins = profile.framework.bind
        if not plugins:
            # No Bind plugin in the profile: bind as DefaultBinder does, through the cluster.
            try:
                await self.cluster.bind(pod, node)
            except (AlreadyAssignedError, BindingUnknownError) as err:
                job.bind_error = err
                return Status.error(str(err)).with_plugin("DefaultBinder")
            except ClusterAPIError as err:
                return Status.error(str(err)).with_plugin("DefaultBinder")
            return SUCCESS
        try:
            status, job.bind_error = await profile.framework.run_bind(job.decision.state, pod, node)
        except FrameworkError as err:
            job.failure = err
            return err.status
        return status


def _failed(err: Exception) -> Status:
    # A bug must not lose the pod: as a failed binding, it is requeued.
    log.error("binding cycle failed", exc_info=err)
    return Status.error(f"binding cycle failed: {type(err).__name__}: {err}")


@types.coroutine
def _resume(coro: Coroutine[Any, Any, T], awaited: Any) -> Generator[Any, Any, T]:
    """Go on with a coroutine that was stepped by hand up to an await (it yielded ``awaited``).

    The task awaiting this waits on what the coroutine waits on, then passes the result or the
    exception (a cancellation) back in: as if it had run the coroutine from its start.
    """
    while True:
        try:
            sent = yield awaited
        except GeneratorExit:  # closed, not resumed: close the coroutine too (as `yield from` does)
            coro.close()
            raise
        except BaseException as err:
            try:
                awaited = coro.throw(err)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        else:
            try:
                awaited = coro.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
