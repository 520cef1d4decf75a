"""The binding cycle: off the scheduling path, as asyncio tasks with bounded concurrency.

WaitOnPermit → PreBind → Bind (an interested binder extender, else the Bind plugins in order, SKIP
passing to the next) → PostBind. Any failure is returned as a status; the scheduler then unreserves,
forgets the assumed pod and requeues it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import ClusterAPIError
from kubesched.framework.status import SUCCESS, Code, Status
from kubesched.scheduler.backend import Backend
from kubesched.scheduler.cycle import Outcome
from kubesched.scheduler.extenders import ExtenderError, ExtenderSet
from kubesched.scheduler.pluginmanager import Profile


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

    async def wait(self, pod: PodInfo, waits: dict[str, float]) -> Status:
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


OnDone = Callable[[Outcome, Status, float], None]


class Binder:
    """Runs binding cycles as tasks, at most ``concurrency`` at once."""

    def __init__(
        self,
        backend: Backend,
        extenders: Callable[[], ExtenderSet],
        waiting: WaitingPods,
        on_done: OnDone,
        concurrency: int = 256,
    ) -> None:
        self.backend = backend
        self.extenders = extenders
        self.waiting = waiting
        self.on_done = on_done
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, profile: Profile, outcome: Outcome) -> None:
        self._spawn(self._run(profile, outcome))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for every binding in flight (graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _run(self, profile: Profile, outcome: Outcome) -> None:
        started = time.perf_counter()
        async with self._slots:
            try:
                status = await self.bind_cycle(profile, outcome)
            except Exception as err:  # a plugin bug must not lose the pod: it is requeued
                status = Status.error(f"binding cycle failed: {type(err).__name__}: {err}")
        self.on_done(outcome, status, time.perf_counter() - started)

    async def bind_cycle(self, profile: Profile, outcome: Outcome) -> Status:
        fw, state, pod, node = profile.framework, outcome.state, outcome.pod, outcome.node or ""
        if outcome.waits:
            status = await self.waiting.wait(pod, outcome.waits)
            if not status.ok:
                return status
        for plugin in fw.pre_bind:
            status = (await plugin.pre_bind(state, pod, node)).with_plugin(plugin.name)
            if not status.ok:
                return status
        status = await self._bind(profile, outcome)
        if not status.ok:
            return status
        for post in fw.post_bind:
            post.post_bind(state, pod, node)
        return SUCCESS

    async def _bind(self, profile: Profile, outcome: Outcome) -> Status:
        pod, node = outcome.pod, outcome.node or ""
        binder = self.extenders().binder(pod)
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
                await self.backend.bind(pod, node)
            except ClusterAPIError as err:
                return Status.error(str(err)).with_plugin("DefaultBinder")
            return SUCCESS
        for plugin in plugins:
            status = (await plugin.bind(outcome.state, pod, node)).with_plugin(plugin.name)
            if status.code == Code.SKIP:
                continue
            return status
        return Status.error(f"no bind plugin bound pod {pod.key}")
