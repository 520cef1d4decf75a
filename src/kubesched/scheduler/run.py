"""Running against a live cluster: watches, leader election, HTTP endpoints, reload, graceful shutdown.

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
from typing import Any

import msgspec

from kubesched.api.core import Node, ObjectMeta, Pod, ReplicationController, Service, Workload
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.kubeclient import Connection, CredentialError, KubeClient
from kubesched.cluster.reflector import Handlers, Reflector
from kubesched.cluster.source import ACTIVE_PODS
from kubesched.cluster.workloads import Workloads
from kubesched.config.profiles import ConfigError, SchedulerConfiguration
from kubesched.framework.interfaces import Handle
from kubesched.http.server import HTTPServer
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.profiles.manager import Built, Reloader, module_files
from kubesched.scheduler.remote.apiserver import APIServerWriter
from kubesched.scheduler.remote.extenders import ExtenderSet
from kubesched.scheduler.remote.leader import LeaderElector, LeadershipLost, default_identity
from kubesched.scheduler.server import SchedulerRoutes

log = logging.getLogger("kubesched.scheduler")
DRAIN_GRACE = 5.0  # bindings in flight at SIGTERM
REPORT_GRACE = 3.0  # status patches and events still being written


class _Namespace(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


def _key(meta: ObjectMeta) -> str:
    return f"{meta.namespace}/{meta.name}"


@dataclass
class LiveOptions:
    connection: Connection
    build: Callable[[Callable[[str], Handle]], Built]
    config_path: Path | None
    host: str
    port: int
    reload_interval: float = 2.0
    identity: str | None = None
    batching: bool = True  # the OpportunisticBatching feature gate
    # The configuration read at start-up (its client settings and leader election), and how a reload of
    # config_path builds (reads the file again); ``build`` builds the one read at start-up.
    config: SchedulerConfiguration | None = None
    reload: Callable[[Callable[[str], Handle]], Built] | None = None


def reflectors(
    client: KubeClient, scheduler: Scheduler, backend: APIServerWriter, workloads: Workloads
) -> list[Reflector[Any]]:
    """List+watch of what the scheduler reads; the cache counts as synced once nodes and pods are listed."""
    done: set[str] = set()

    def synced(kind: str) -> None:
        done.add(kind)
        if {"nodes", "pods"} <= done:
            scheduler.cache.tracks_pods = True
            scheduler.cache.synced.set()

    def replace_pdbs(items: list[PodDisruptionBudget]) -> None:
        backend.pdb_objects = {_key(p.metadata): p for p in items}

    def replace_namespaces(items: list[_Namespace]) -> None:
        backend.namespaces = {n.metadata.name: dict(n.metadata.labels or {}) for n in items}

    def upsert_pdb(pdb: PodDisruptionBudget) -> None:
        backend.pdb_objects[_key(pdb.metadata)] = pdb

    def delete_pdb(pdb: PodDisruptionBudget) -> None:
        backend.pdb_objects.pop(_key(pdb.metadata), None)

    def upsert_namespace(ns: _Namespace) -> None:
        backend.namespaces[ns.metadata.name] = dict(ns.metadata.labels or {})

    def delete_namespace(ns: _Namespace) -> None:
        backend.namespaces.pop(ns.metadata.name, None)

    return [
        Reflector(
            client,
            "/api/v1/nodes",
            Node,
            Handlers(
                scheduler.nodes_replaced, scheduler.node_upserted, scheduler.node_deleted, lambda: synced("nodes")
            ),
        ),
        Reflector(
            client,
            "/api/v1/pods",
            Pod,
            Handlers(scheduler.pods_replaced, scheduler.pod_upserted, scheduler.pod_deleted, lambda: synced("pods")),
            field_selector=ACTIVE_PODS,
        ),
        Reflector(
            client,
            "/apis/policy/v1/poddisruptionbudgets",
            PodDisruptionBudget,
            Handlers(replace_pdbs, upsert_pdb, delete_pdb),
        ),
        Reflector(
            client,
            "/api/v1/namespaces",
            _Namespace,
            Handlers(replace_namespaces, upsert_namespace, delete_namespace),
        ),
        # What selects pods, for PodTopologySpread's default constraints (as kube-scheduler's informers).
        Reflector(
            client,
            "/api/v1/services",
            Service,
            Handlers(workloads.services.replace, workloads.services.upsert, workloads.services.delete),
        ),
        Reflector(
            client,
            "/api/v1/replicationcontrollers",
            ReplicationController,
            Handlers(workloads.controllers.replace, workloads.controllers.upsert, workloads.controllers.delete),
        ),
        Reflector(
            client,
            "/apis/apps/v1/replicasets",
            Workload,
            Handlers(workloads.replica_sets.replace, workloads.replica_sets.upsert, workloads.replica_sets.delete),
        ),
        Reflector(
            client,
            "/apis/apps/v1/statefulsets",
            Workload,
            Handlers(workloads.stateful_sets.replace, workloads.stateful_sets.upsert, workloads.stateful_sets.delete),
        ),
    ]


async def serve(options: LiveOptions) -> int:
    """Run until SIGTERM/SIGINT (0) or a lost lease (1)."""
    client = KubeClient(options.connection, user_agent="kubesched-scheduler")
    try:
        user = await client.authenticate()
    except CredentialError as auth_err:
        log.error("%s", auth_err)
        await client.aclose()
        return 1
    log.info("authenticated to %s as %s", options.connection.server, user or "(not checked: server not reachable)")
    cache = ClusterCache()
    # Client settings, as read at start-up (without them, from a build of its own); the scheduler builds the profiles.
    config = options.config or options.build(Handle).config
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
    backend = APIServerWriter(
        client,
        qps=config.qps,
        burst=config.burst,
        identity=identity,
        gate=elector.may_act if elector is not None else None,
    )
    workloads = Workloads()
    scheduler = Scheduler(
        cache,
        backend,
        options.build,
        batching=options.batching,
        extenders=ExtenderSet,
        default_selector=workloads.default_selector,
    )
    if elector is not None:
        scheduler.metrics.master_status.labels(election.resource_name).set(0)  # a standby until it leads
    server = HTTPServer(SchedulerRoutes(scheduler.metrics, lambda: cache.synced.is_set()), options.host, options.port)
    try:
        await server.start()
    except OSError as bind_err:
        log.error("cannot serve health and metrics on %s:%d: %s", options.host, options.port, bind_err.strerror)
        await client.aclose()
        if lease_client is not None:
            await lease_client.aclose()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    background = [asyncio.create_task(r.run()) for r in reflectors(client, scheduler, backend, workloads)]
    if options.config_path is not None:

        def apply(built: Built) -> None:
            scheduler.apply(built)
            scheduler.metrics.reloads.labels("applied").inc()

        def build() -> Built:
            try:
                return (options.reload or options.build)(scheduler.make_handle)
            except ConfigError:
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
        "scheduler for %s on %s; health and metrics on http://%s:%d",
        ", ".join(scheduler.built.profiles),
        options.connection.server,
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
        await backend.aclose(REPORT_GRACE)
    finally:
        stopping.cancel()
        await server.shutdown(grace=1.0)
        for task in background:
            task.cancel()
        if background:
            await asyncio.wait(background, timeout=3.0)
        await client.aclose()
        if lease_client is not None:
            await lease_client.aclose()
    return code
