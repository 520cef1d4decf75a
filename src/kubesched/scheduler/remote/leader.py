"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm and kube-scheduler's timing.

Acquire: every retryPeriod, read the Lease; take it when it is free, ours, or its holder has not
renewed within leaseDuration *as observed locally* (clocks of replicas are never compared). Renew
as client-go's renew loop: retryPeriod after the last renewal, a round of tries every retryPeriod,
the round — requests included — bounded by renewDeadline; a round that ends without a renewal loses
the lease (`keep` raises LeadershipLost; kube-scheduler exits, so does kubesched).

`may_act()` is the fence the scheduler's writes pass right before they are sent: true only while
the last successful renewal *started* less than min(leaseDuration, renewDeadline + retryPeriod) ago.
A standby takes over no sooner than leaseDuration after it saw that renewal, which happened after it
started, so no binding is sent once the lease may be someone else's — even if the renew loop itself
is stuck. Release on graceful shutdown, so a standby takes over without waiting out the lease. The
holder identity is `<hostname>_<uuid>`, as kube-scheduler's.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

import msgspec

from kubesched.cluster.kubeclient import APIError, KubeClient
from kubesched.config.profiles import LeaderElectionConfig
from kubesched.errors import ClusterError
from kubesched.scheduler.remote.events import micro_time

log = logging.getLogger("kubesched.leader")


class LeadershipLost(ClusterError):
    """The lease could not be renewed within renewDeadline."""


class _LeaseSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class _Meta(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Lease(msgspec.Struct, omit_defaults=True):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _LeaseSpec = msgspec.field(default_factory=_LeaseSpec)
    apiVersion: str = "coordination.k8s.io/v1"
    kind: str = "Lease"


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        identity: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.config = config
        self.identity = identity or default_identity()
        self.clock = clock
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{config.resource_namespace}/leases/{config.resource_name}"
        self.leading = False
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._valid_until = 0.0  # may_act() until then (clock())
        self.renewals = 0

    async def _get(self) -> _Lease | None:
        try:
            return msgspec.json.decode(await self.client.request("GET", self.path), type=_Lease)
        except APIError as err:
            if err.status == 404:
                return None
            raise

    async def try_acquire_or_renew(self) -> bool:
        """One round of client-go's tryAcquireOrRenew."""
        now = self.clock()
        stamp = micro_time()
        duration = int(self.config.lease_duration)
        try:
            lease = await self._get()
            if lease is None:
                fresh = _Lease(
                    _Meta(self.config.resource_name, self.config.resource_namespace),
                    _LeaseSpec(self.identity, duration, stamp, stamp, 0),
                )
                path = self.path.rsplit("/", 1)[0]
                await self.client.request("POST", path, msgspec.json.encode(fresh))
                self._observe(fresh, now)
                return True
            spec = lease.spec
            record = (spec.holder_identity, spec.renew_time, spec.acquire_time, lease.metadata.resource_version)
            if record != self._observed:
                self._observed, self._observed_at = record, now
            holder = spec.holder_identity or ""
            mine = holder == self.identity
            expires = self._observed_at + (spec.lease_duration_seconds or duration)
            if holder and not mine and expires > now:
                return False  # held by another and not expired
            new_spec = _LeaseSpec(
                self.identity,
                duration,
                spec.acquire_time if mine else stamp,
                stamp,
                (spec.lease_transitions or 0) + (0 if mine else 1),
            )
            updated = _Lease(lease.metadata, new_spec)
            body = await self.client.request("PUT", self.path, msgspec.json.encode(updated))
            self._observe(msgspec.json.decode(body, type=_Lease), now)
            return True
        except (APIError, OSError, msgspec.DecodeError) as err:
            # A 409 means someone else updated first: simply not us this round.
            log.debug("lease %s: %s", self.path, err)
            return False

    def _observe(self, lease: _Lease, now: float) -> None:
        spec = lease.spec
        self._observed = (spec.holder_identity, spec.renew_time, spec.acquire_time, lease.metadata.resource_version)
        self._observed_at = now

    def may_act(self) -> bool:
        """Whether this replica surely still holds the lease (the fence of every scheduling write)."""
        return self.leading and self.clock() < self._valid_until

    async def _try(self, budget: float) -> bool:
        """One tryAcquireOrRenew bounded by ``budget`` seconds; a success extends may_act()."""
        started = self.clock()
        if budget <= 0:
            return False
        try:
            async with asyncio.timeout(budget):
                ok = await self.try_acquire_or_renew()
        except TimeoutError:
            log.info("lease %s: no answer within %.1fs", self.path, budget)
            return False
        if ok:
            hold = min(self.config.lease_duration, self.config.renew_deadline + self.config.retry_period)
            self._valid_until = started + hold
        return ok

    async def acquire(self) -> None:
        """Return once this replica holds the lease."""
        log.info("waiting to lead: lease %s as %s", self.path, self.identity)
        while True:
            if await self._try(self.config.renew_deadline):
                break
            await asyncio.sleep(self.config.retry_period)
        self.leading = True
        log.info("became the leader (lease %s)", self.path)

    async def keep(self) -> None:
        """Renew (client-go's renew loop); raises LeadershipLost when a round finds no renewal within renewDeadline."""
        while True:
            await asyncio.sleep(self.config.retry_period)
            deadline = self.clock() + self.config.renew_deadline
            while not await self._try(deadline - self.clock()):
                left = deadline - self.clock()
                if left <= 0:
                    self.leading = False
                    raise LeadershipLost(f"failed to renew lease {self.path} within {self.config.renew_deadline}s")
                await asyncio.sleep(min(self.config.retry_period, left))
            self.renewals += 1

    async def release(self) -> None:
        """Give the lease up (ReleaseOnCancel): the holder emptied, a one-second duration."""
        if not self.leading:
            return
        self.leading = False
        try:
            async with asyncio.timeout(self.config.retry_period + 1.0):
                await self._release()
        except (APIError, OSError, TimeoutError) as err:
            log.warning("could not release lease %s: %s", self.path, err)

    async def _release(self) -> None:
        lease = await self._get()
        if lease is None or lease.spec.holder_identity != self.identity:
            return
        spec = _LeaseSpec("", 1, lease.spec.acquire_time, micro_time(), lease.spec.lease_transitions)
        await self.client.request("PUT", self.path, msgspec.json.encode(_Lease(lease.metadata, spec)))
        log.info("released lease %s", self.path)
