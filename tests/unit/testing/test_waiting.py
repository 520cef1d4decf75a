"""Waiting for conditions: the first truthy value comes back, a deadline fails with what was awaited."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from kubesched.testing.waiting import WaitTimeout, until, wait_until


def test_wait_until_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "", "ready"])
    assert wait_until(lambda: next(values), "the value", within=5, interval=0) == "ready"


def test_wait_until_names_what_it_waited_for() -> None:
    with pytest.raises(WaitTimeout, match=r"timed out after 0\.05s waiting for the pod bound"):
        wait_until(lambda: False, "the pod bound", within=0.05, interval=0.01)


def test_wait_until_stops_when_alive_raises() -> None:
    calls = itertools.count()

    def alive() -> None:
        if next(calls) == 2:
            raise RuntimeError("the process died")

    with pytest.raises(RuntimeError, match="the process died"):
        wait_until(lambda: False, "never", within=30, interval=0, alive=alive)


def test_a_timeout_is_a_timeout_error() -> None:
    assert issubclass(WaitTimeout, TimeoutError)  # callers catching TimeoutError keep working


async def test_until_lets_the_loop_run_between_polls() -> None:
    done = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, done.set)
    assert await until(done.is_set, "the event", within=5) is True


async def test_until_awaits_a_coroutine_check() -> None:
    seen = []

    async def check() -> int:
        seen.append(1)
        return len(seen) if len(seen) >= 3 else 0

    assert await until(check, "three polls", within=5, interval=0) == 3


async def test_until_names_what_it_waited_for() -> None:
    with pytest.raises(WaitTimeout, match="waiting for the watch"):
        await until(lambda: False, "the watch", within=0.05)
