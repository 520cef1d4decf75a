"""Waiting for a condition: poll it with a deadline, never sleep a fixed time and hope.

``wait_until`` is for synchronous code (a test talking to the control plane over blocking HTTP),
``until`` for coroutines (it yields to the event loop between polls, so the code under test runs).
Both return the check's first truthy value, so a wait can also fetch what it waited for::

    pod = wait_until(lambda: bound(cp, ns, "p1"), "p1 bound", within=30)
    await until(lambda: cache.node("n1"), "n1 in the cache")

For "nothing happens", wait first for a later event that proves the system got past the moment
(a later pod scheduled, an event recorded, a counter advanced), then assert the absence.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kubesched.errors import HarnessError

T = TypeVar("T")


class WaitTimeout(HarnessError, TimeoutError):
    """A condition did not hold within its deadline; the message names the condition."""


def wait_until(
    check: Callable[[], T],
    what: str,
    *,
    within: float = 30.0,
    interval: float = 0.1,
    alive: Callable[[], object] | None = None,
) -> T:
    """Poll ``check`` until it returns something truthy, and return that.

    ``alive`` runs after each failed poll and raises to stop early (a process under test died).
    Raises WaitTimeout after ``within`` seconds.
    """
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        if alive is not None:
            alive()
        if time.monotonic() > deadline:
            raise WaitTimeout(f"timed out after {within:g}s waiting for {what}")
        time.sleep(interval)


async def until(
    check: Callable[[], T | Awaitable[T]],
    what: str,
    *,
    within: float = 30.0,
    interval: float = 0.02,
) -> T:
    """Poll ``check`` (a function or a coroutine function) until its value is truthy, and return it.

    Between polls the event loop runs. Raises WaitTimeout after ``within`` seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise WaitTimeout(f"timed out after {within:g}s waiting for {what}")
        await asyncio.sleep(interval)


__all__ = ["WaitTimeout", "until", "wait_until"]
