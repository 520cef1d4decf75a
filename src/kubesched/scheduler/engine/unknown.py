"""Bindings whose answer was lost: the pod stays counted on its node until someone can say what happened.

A Binding POST whose answer is lost (timeout, reset) may have been applied. kube-scheduler forgets the
pod and may over-commit the node; here the pod stays assumed on its node while `UnknownBindings` reads
it back (retried 0.1 → 2 s) — unless the watch tells first (the scheduler's event methods call
`settle`). Whatever tells, the scheduler's ``on_settled`` callback decides: confirm, move, or forget and
retry. While the API server cannot answer, the pod stays counted (nothing can be bound then anyway, and
forgetting it would hand its room to the next pod the moment the server is back); after ``ttl`` the log
says so, once. Only without a way to read pods does the TTL end it (settled as not bound).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import ClusterAPIError

log = logging.getLogger("kubesched.scheduler")
DEFAULT_TTL = 30.0
ReadPod = Callable[[PodInfo], Awaitable[str | None]]


@dataclass(slots=True)
class Unknown:
    """A pod whose Binding was sent but whose answer was lost: still assumed on ``node``."""

    pod: PodInfo
    node: str
    profile: str
    message: str
    deadline: float
    context: Any  # what the scheduler needs to finish the binding (its `Binding` record)


class UnknownBindings:
    """The pods with a lost binding answer, by UID, and the tasks reading them back."""

    def __init__(
        self, read: ReadPod | None, on_settled: Callable[[Unknown, str | None], None], ttl: float = DEFAULT_TTL
    ) -> None:
        self.read = read
        self.on_settled = on_settled
        self.ttl = ttl
        self._entries: dict[str, Unknown] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def __contains__(self, uid: str) -> bool:
        return uid in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, pod: PodInfo, node: str, profile: str, message: str, context: Any) -> None:
        """Keep ``pod`` counted on ``node`` and start reading it back."""
        self._entries[pod.uid] = Unknown(pod, node, profile, message, time.monotonic() + self.ttl, context)
        task = asyncio.get_running_loop().create_task(self._resolve(pod.uid))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def settle(self, uid: str, where: str | None) -> None:
        """What became of the pod: bound to ``where``, not bound (''), or gone (None)."""
        entry = self._entries.pop(uid, None)
        if entry is not None:
            self.on_settled(entry, where)

    async def aclose(self) -> None:
        """Stop reading (shutdown: the next scheduler sees the pods as they are)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _resolve(self, uid: str) -> None:
        entry = self._entries.get(uid)
        read = self.read
        delay = 0.1
        warned = False
        while entry is not None and self._entries.get(uid) is entry:
            left = entry.deadline - time.monotonic()
            if left <= 0 and read is None:
                entry.message += f"; its state unknown after {self.ttl:g}s"
                log.warning("binding %s: %s; forgotten and retried", entry.pod.key, entry.message)
                self.settle(uid, "")
                return
            if left <= 0 and not warned:
                warned = True
                log.warning(
                    "binding %s: state unknown for %gs (the API server does not answer); still counted on %s",
                    entry.pod.key,
                    self.ttl,
                    entry.node,
                )
            if read is not None:
                try:
                    where = await asyncio.wait_for(read(entry.pod), 5.0)
                except (ClusterAPIError, OSError, TimeoutError) as err:
                    log.debug("reading %s after a lost binding answer: %s", entry.pod.key, err)
                else:
                    if self._entries.get(uid) is entry:
                        self.settle(uid, where)
                    return
            await asyncio.sleep(delay if read is not None else min(delay, max(left, 0.0)))
            delay = min(delay * 2, 2.0)
