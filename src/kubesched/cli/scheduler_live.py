"""`kubesched scheduler run` against a live cluster, wired: watches, leader election, HTTP endpoints, reload,
graceful shutdown.

The configuration is read once by the command (client settings, leader election) and built once here,
with the handles of the scheduler (user plugin modules are imported once at start-up; a reload of a
changed file builds anew).

Watches (nodes, pods that are not finished, PodDisruptionBudgets, namespaces) start at once on every
replica, so a standby's cache is warm; only the leader schedules, and its writes pass the elector's
fence (`LeaderElector.may_act`). SIGTERM/SIGINT: stop taking pods, finish the bindings in flight (at
most DRAIN_GRACE seconds), release the lease, exit 0 — within seconds even when the API server went
silent. A lost lease exits 1 at once, as kube-scheduler ("leaderelection lost").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.kubeclient import Connection, CredentialError, KubeClient
from kubesched.cluster.objects import ClusterObjects
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.source import scheduler_source, watch_resources
from kubesched.cluster.volumes import VolumeObjects
from kubesched.cluster.workloads import Workloads
from kubesched.config.profiles import SchedulerConfiguration
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import Handle
from kubesched.http.server import HTTPServer
from kubesched.scheduler.decisions import DEFAULT_RECORDS, DecisionRecords, RecordingWriter
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.profiles.manager import Built, Reloader, module_files
from kubesched.scheduler.remote.apiserver import APIServerWriter
from kubesched.scheduler.remote.extenders import ExtenderSet
from kubesched.scheduler.remote.leader import LeaderElector, LeadershipLost, default_identity
from kubesched.scheduler.remote.volumes import APIVolumes
from kubesched.scheduler.server import SchedulerRoutes
from kubesched.versions import REFERENCE, Release

log = logging.getLogger("kubesched.scheduler")
DRAIN_GRACE = 5.0  # bindings in flight at SIGTERM
REPORT_GRACE = 3.0  # status patches and events still being written
Build = Callable[[Callable[[str], Handle]], Built]


@dataclass
class LiveOptions:
    connection: Connection
    config: SchedulerConfiguration  # as read, no plugin imported yet: client settings and leader election
    build: Build  # builds ``config``: called once, with the scheduler's handles
    reload: Build | None  # reads --config again and builds it (None without --config)
    config_path: Path | None
    host: str
    port: int
    reload_interval: float = 2.0
    identity: str | None = None
    batching: bool = True  # the OpportunisticBatching feature gate
    release: Release = REFERENCE  # the Kubernetes release followed (already given to ``build`` and ``reload``)
    decision_records: int = DEFAULT_RECORDS  # pods whose last decision /debug/decisions keeps (0: none)


async def serve(options: LiveOptions) -> int:
    """Run until SIGTERM/SIGINT (0) or a lost lease (1)."""
    config = options.config
    client = KubeClient(options.connection, user_agent="kubesched-scheduler")
    identity = options.identity or default_identity()  # the Lease holder's, and the events' reporting instance
    election = config.leader_election
    elector: LeaderElector | None = None
    lease_client: KubeClient | None = None
    if election.leader_elect:
        # A client of its own, as kube-scheduler's: renewals never queue behind hundreds of bindings.
        lease_client = KubeClient(
            options.connection, election.renew_deadline, connections=2, user_agent="kubesched-scheduler/leader-election"
        )
        elector = LeaderElector(lease_client, election, identity)

    async def close_clients() -> None:
        await client.aclose()
        if lease_client is not None:
            await lease_client.aclose()

    objects = ClusterObjects()  # PodDisruptionBudgets and namespaces: the watches write, the plugins read
    records = DecisionRecords(options.decision_records)
    backend = APIServerWriter(
        client,
        qps=config.qps,
        burst=config.burst,
        identity=identity,
        gate=elector.may_act if elector is not None else None,
        objects=objects,
    )
    workloads = Workloads()
    volumes = VolumeObjects(api=APIVolumes(backend._call), listed=False)  # the watches write, the volume plugins read
    cache = ClusterCache()
    # DynamicResources' objects, watched once the API server is known to serve resource.k8s.io/v1.
    resources = ResourceObjects(served=False)
    resources.writer = backend.reserve_claim
    try:
        # The one build of the configuration (ConfigurationError: the command reports every problem, exit 2).
        scheduler = Scheduler(
            cache,
            RecordingWriter(backend, records) if records.size else backend,
            options.build,
            batching=options.batching,
            extenders=ExtenderSet,
            default_selector=workloads.default_selector,
            volumes=volumes,
            resources=resources,
        )
        resources.on_change = scheduler.resources_changed
    except ConfigurationError:
        await close_clients()
        raise
    try:
        user = await client.authenticate()
    except CredentialError as auth_err:
        log.error("%s", auth_err)
        await close_clients()
        return 1
    log.info("authenticated to %s as %s", options.connection.server, user or "(not checked: server not reachable)")
    if elector is not None:
        scheduler.metrics.master_status.labels(election.resource_name).set(0)  # a standby until it leads
    routes = SchedulerRoutes(scheduler.metrics, lambda: cache.synced.is_set(), records)
    server = HTTPServer(routes, options.host, options.port)
    try:
        await server.start()
    except OSError as bind_err:
        log.error("cannot serve health and metrics on %s:%d: %s", options.host, options.port, bind_err.strerror)
        await close_clients()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    volumes.on_change = scheduler.volume_changed
    source = scheduler_source(client, cache, scheduler, objects, workloads, volumes=volumes)
    background = [asyncio.create_task(source.run()), asyncio.create_task(watch_resources(client, resources))]
    if options.config_path is not None and options.reload is not None:
        rebuild = options.reload

        def apply(built: Built) -> None:
            scheduler.apply(built)
            scheduler.metrics.reloads.labels("applied").inc()

        def build() -> Built:
            try:
                return rebuild(scheduler.make_handle)
            except ConfigurationError:
                scheduler.metrics.reloads.labels("refused").inc()
                raise

        reloader = Reloader(
            options.config_path,
            build,
            apply,
            lambda: module_files(scheduler.built.config.plugin_modules),
            options.reload_interval,
        )
        background.append(asyncio.create_task(reloader.run()))
    log.info(
        "scheduler for %s on %s (Kubernetes v%s semantics); health and metrics on http://%s:%d",
        ", ".join(scheduler.built.profiles),
        options.connection.server,
        options.release.version,
        options.host,
        options.port,
    )
    code = 0
    stopping = asyncio.create_task(stop.wait())
    try:
        if elector is not None:
            acquiring = asyncio.create_task(elector.acquire())
            await asyncio.wait({acquiring, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not acquiring.done():
                acquiring.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await acquiring
        if elector is not None:
            scheduler.metrics.master_status.labels(election.resource_name).set(1 if elector.leading else 0)
        if not stop.is_set():
            work = [asyncio.create_task(scheduler.run())]
            if elector is not None:
                work.append(asyncio.create_task(elector.keep()))
            done, _ = await asyncio.wait({*work, stopping}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stopping and task.exception() is not None:
                    err = task.exception()
                    if isinstance(err, LeadershipLost):
                        log.error("leader election lost: %s", err)
                        scheduler.metrics.master_status.labels(election.resource_name).set(0)
                    else:
                        log.error("scheduler failed: %r", err, exc_info=err)
                    code = 1
            scheduler.stop()
            for task in work:
                if not task.done():
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError, LeadershipLost, Exception):
                    await task
        log.info("shutting down: finishing bindings in flight")
        if code == 0:
            try:
                async with asyncio.timeout(DRAIN_GRACE):
                    await scheduler.drain()
            except TimeoutError:
                log.warning("shutdown: bindings still in flight after %.0fs: abandoned", DRAIN_GRACE)
            if elector is not None:
                await elector.release()
        # A lost lease or a failure ends at once, as kube-scheduler exits: its reports are dropped, not awaited
        # (writes are fenced anyway), so a standby taking over never overlaps a process still winding down.
        await backend.aclose(REPORT_GRACE if code == 0 else 0.0)
    finally:
        stopping.cancel()
        await server.shutdown(grace=1.0 if code == 0 else 0.0)
        for task in background:
            task.cancel()
        if background:
            await asyncio.wait(background, timeout=3.0)
        await close_clients()
    return code
