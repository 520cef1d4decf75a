"""Leader election against an in-memory Lease: client-go's renew loop, renewals bounded by renewDeadline, the fence."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec
import pytest

from kubesched.cluster.kubeclient import APIError
from kubesched.config.profiles import LeaderElectionConfig
from kubesched.scheduler.remote.leader import LeaderElector, LeadershipLost
from kubesched.testing.waiting import until

CONFIG = LeaderElectionConfig(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1, resource_name="l")


class LeaseServer:
    """A Lease store with optimistic concurrency; ``silent`` makes every request hang (a blackholed link)."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.silent = False
        self.puts = 0

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> bytes:
        if self.silent:
            await asyncio.Event().wait()
        if method == "GET":
            if self.lease is None:
                raise APIError(404, "not found", "NotFound")
            return msgspec.json.encode(self.lease)
        doc = msgspec.json.decode(body)
        if method == "PUT":
            if self.lease is None or doc["metadata"].get("resourceVersion") != str(self.version):
                raise APIError(409, "conflict", "Conflict")
            self.puts += 1
        self.version += 1
        doc["metadata"]["resourceVersion"] = str(self.version)
        self.lease = doc
        return msgspec.json.encode(doc)


async def test_renewals_stuck_on_a_silent_connection_lose_the_lease_within_the_deadline() -> None:
    server = LeaseServer()
    elector = LeaderElector(server, CONFIG, "me")  # type: ignore[arg-type]
    await elector.acquire()
    assert elector.may_act()
    keep = asyncio.create_task(elector.keep())
    await until(lambda: server.puts >= 2, "two renewals", within=5, interval=0.01)
    assert elector.may_act()
    server.silent = True
    silenced = time.monotonic()
    # Before: the renewal waited on the silent connection for ever and the leader never stepped down.
    await until(lambda: not elector.may_act(), "the leader fenced", within=3, interval=0.01)
    fenced_after = time.monotonic() - silenced
    async with asyncio.timeout(3):
        with pytest.raises(LeadershipLost):
            await keep
    lost_after = time.monotonic() - silenced
    # The fence closes before a standby may take over: leaseDuration after the last renewal it saw.
    assert fenced_after < CONFIG.lease_duration
    assert lost_after <= CONFIG.retry_period + CONFIG.renew_deadline + 1.0  # slack for a loaded machine
    assert not elector.leading and not elector.may_act()


async def test_a_standby_takes_over_only_after_the_lease_expired_and_the_leader_fenced() -> None:
    server = LeaseServer()
    leader = LeaderElector(server, CONFIG, "a")  # type: ignore[arg-type]
    standby = LeaderElector(server, CONFIG, "b")  # type: ignore[arg-type]
    await leader.acquire()
    assert not await standby.try_acquire_or_renew()
    keep = asyncio.create_task(leader.keep())
    # The leader's link goes silent (its own view), the standby's does not.

    async def leader_view(method: str, path: str, body: Any = None, **kw: Any) -> bytes:
        await asyncio.Event().wait()
        return b""

    leader.client = type("C", (), {"request": staticmethod(leader_view)})()  # type: ignore[assignment]
    t0 = time.monotonic()
    acquiring = asyncio.create_task(standby.acquire())
    async with asyncio.timeout(5):
        await acquiring
    took_over = time.monotonic()
    assert took_over - t0 >= CONFIG.lease_duration - CONFIG.retry_period - 0.05
    assert not leader.may_act()  # fenced before the standby led
    with pytest.raises(LeadershipLost):
        await keep
    assert server.lease is not None and server.lease["spec"]["holderIdentity"] == "b"


async def test_release_is_bounded_on_a_silent_connection() -> None:
    server = LeaseServer()
    elector = LeaderElector(server, CONFIG, "me")  # type: ignore[arg-type]
    await elector.acquire()
    server.silent = True
    async with asyncio.timeout(2):
        await elector.release()
    assert not elector.leading
