"""`kubesched scheduler run --cluster FILE`: the dry run, in memory. A plugin's bug is reported once per pod (its line)
and its traceback once per bug; nothing changes between retries here, so an errored pod waits for an event; exit 3."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable

from kubesched.cli import logs, tables
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.files import ClusterFileError, read_cluster
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.storage import volume_objects
from kubesched.errors import CLIError
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.engine.state import Placement
from kubesched.scheduler.engine.writer import SCHEDULER_ERROR
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import Built
from kubesched.scheduler.remote.extenders import ExtenderSet

EXIT_PLUGIN_ERROR = 3  # a plugin raised or returned an Error status (1: --fail-on-pending's pending pods; 2: usage)


def run_in_memory(args: argparse.Namespace, build: Callable[[Callable[[str], Handle]], Built]) -> int:
    """Schedule the pending pods of ``--cluster`` in memory with the configuration ``build`` builds; print where
    each went (or why not), the preemptions and the claims allocated. Exit 3 when a plugin failed with an error."""
    logging.basicConfig(level=logging.WARNING, format="kubesched: %(levelname)s: %(message)s")
    bugs = logs.OneTracebackPerBug()  # nothing changes between pods here: a plugin's bug is reported once
    for handler in logging.getLogger().handlers:
        handler.addFilter(bugs)
    try:
        return _run_in_memory(args, build, bugs)
    finally:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(bugs)


def _run_in_memory(
    args: argparse.Namespace, build: Callable[[Callable[[str], Handle]], Built], bugs: logs.OneTracebackPerBug
) -> int:
    try:
        found = read_cluster(args.cluster)
    except ClusterFileError as err:
        raise CLIError(str(err)) from None
    for warning in found.warnings:
        logging.getLogger("kubesched.cluster").warning("%s", warning)

    errored: list[str] = []  # pending pods whose last attempt ended with an Error status (SchedulerError)

    async def main() -> tuple[list[Placement], list[tuple[str, str]], list[tuple[str, list[str], list[str]]]]:
        clock = ManualClock()
        resources = ResourceObjects(found.device_classes, found.resource_slices, found.resource_claims)
        cluster = MemoryCluster(
            found.nodes,
            found.pods,
            found.pdbs,
            found.namespaces,
            volumes=volume_objects(found.storage),
            resources=resources,
        )
        scheduler = Scheduler(
            ClusterCache(),
            cluster,
            build,
            clock=clock,
            batching=args.gates["OpportunisticBatching"],
            extenders=ExtenderSet,
            # The file's Services, ReplicaSets… give PodTopologySpread's default constraints their selector.
            default_selector=found.workloads.default_selector,
            volumes=cluster.volumes,
            resources=resources,
        )
        cluster.attach(scheduler)
        # Nothing changes in memory between two retries of a pod a plugin's error failed: it waits for an event.
        scheduler.queue.retry_errors = False
        await run_until_settled(scheduler, clock)
        preempted = [(e.regarding, e.note) for e in cluster.events if e.reason == "Preempted"]
        placements = cluster.placements()
        errored.extend(
            p.pod for p in placements if not p.node and cluster.conditions.get(p.pod, ("",))[0] == SCHEDULER_ERROR
        )
        return placements, preempted, allocated_claims(resources)

    placements, preempted, claims = asyncio.run(main())
    if args.output == "json":
        out = {
            "placements": [{"pod": p.pod, "node": p.node, "reason": p.reason} for p in placements],
            "preemptions": [{"pod": pod, "note": note} for pod, note in preempted],
        }
        if claims:
            out["claims"] = [{"claim": c, "devices": d, "reservedFor": r} for c, d, r in claims]
        print(json.dumps(out, indent=2))
    else:
        print_placements(placements, preempted)
        for claim, devices, reserved in claims:
            print(f"claim {claim}: {', '.join(devices)} (reserved for {', '.join(reserved) or 'nobody'})")
    if bugs.bugs or errored:
        # A plugin raised or returned an Error status (or the scheduler failed): retrying would not change it. Each
        # pod's line says it.
        for line in bugs.summary():
            print(f"kubesched: error: {line}", file=sys.stderr)
        if errored and not bugs.bugs:
            print(
                f"kubesched: error: {len(errored)} pod(s) failed with an error status: {', '.join(errored)}",
                file=sys.stderr,
            )
        return EXIT_PLUGIN_ERROR
    pending = sum(1 for p in placements if not p.node)
    return 1 if pending and args.fail_on_pending else 0


def allocated_claims(resources: ResourceObjects) -> list[tuple[str, list[str], list[str]]]:
    """Each allocated ResourceClaim: its key, its devices (driver/pool/device) and the pods it is reserved for."""
    out = []
    for key, claim in sorted(resources.claims().items()):
        allocation = claim.status.allocation
        if allocation is None:
            continue
        devices = [f"{r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results or []]
        out.append((key, devices, [r.name for r in claim.status.reserved_for or []]))
    return out


def print_placements(placements: list[Placement], preempted: list[tuple[str, str]]) -> None:
    """Where each pod went or why not, the preemptions, a summary: a table at a terminal, else plain lines."""
    placed = sum(1 for p in placements if p.node)
    rows = [(p.pod, p.node or "", "" if p.node else (p.reason or "")) for p in placements]
    rows += [(pod, "", f"preempted: {note}") for pod, note in preempted]
    if tables.table(("POD", "NODE", "NOT SCHEDULED / PREEMPTED"), rows):
        print(f"{placed}/{len(placements)} pending pod(s) scheduled")
        return
    width = max((len(p.pod) for p in placements), default=0)
    lines = [
        f"{p.pod:<{width}}  -> {p.node}" if p.node else f"{p.pod:<{width}}  not scheduled: {p.reason}"
        for p in placements
    ]
    lines += [f"{pod} preempted: {note}" for pod, note in preempted]
    lines.append(f"{placed}/{len(placements)} pending pod(s) scheduled")
    print("\n".join(lines))
