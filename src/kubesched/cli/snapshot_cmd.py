"""`kubesched snapshot`: a live cluster's scheduling objects as a cluster file (`scheduler run --cluster` reads it)."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import logging
import sys
from pathlib import Path

from kubesched.cli import connection
from kubesched.cluster.kubeclient import KubeClient
from kubesched.cluster.snapshot import CHUNK_SIZE, SnapshotError, take, write_atomically
from kubesched.errors import CLIError

DESCRIPTION = """\
Write every object scheduling reads from a live cluster into a cluster file: nodes, pods (not finished
ones), namespaces, PodDisruptionBudgets, PriorityClasses, Services, ReplicationControllers, ReplicaSets,
StatefulSets, PVs, PVCs, StorageClasses, CSINodes, and resource.k8s.io/v1 DeviceClasses, ResourceSlices,
ResourceClaims and ResourceClaimTemplates where the API server serves them. Never Secrets or ConfigMaps.

Lists are read in pages (--chunk-size); a failed page is asked again, an expired one listed again, and the
file is written only once everything was read (to a temporary file, then renamed). Each object keeps only
the fields kubesched's scheduler reads: no managedFields, no annotations but the volume binding ones.

--namespace NS keeps the pending pods of NS only, and the Services, controllers and claim templates of NS;
what occupies the nodes (bound pods, claims, PDBs) is read from every namespace.
"""

EPILOG = """\
Examples:
  # the current context's cluster, then what kubesched would do with its pending pods:
  kubesched snapshot -o cluster.yaml && kubesched scheduler run --cluster cluster.yaml
  # one namespace's pending pods, another context:
  kubesched snapshot --context prod --namespace team-a -o team-a.yaml
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    snap = sub.add_parser(
        "snapshot",
        help="write a live cluster's scheduling objects to a cluster file",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    connection.add_flags(snap)
    snap.add_argument("-n", "--namespace", default="", help="only the pending pods (and their workloads) of NS")
    snap.add_argument("-o", "--output", type=Path, required=True, help="the cluster file to write (YAML)")
    snap.add_argument(
        "--chunk-size",
        type=int,
        default=CHUNK_SIZE,
        help=f"objects per list request, as kubectl's (default {CHUNK_SIZE})",
    )
    snap.set_defaults(func=run_snapshot)


def run_snapshot(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="kubesched: %(levelname)s: %(message)s")
    if args.chunk_size < 1:
        raise CLIError(f"--chunk-size: {args.chunk_size} must be at least 1")
    if not args.output.parent.is_dir():
        raise CLIError(f"--output: {args.output.parent} is not a directory")
    conn = connection.connection(args)

    async def main() -> None:
        client = KubeClient(conn, 60.0, connections=2, user_agent="kubesched/snapshot")
        try:
            snap = await take(client, namespace=args.namespace, chunk_size=args.chunk_size)
        finally:
            await client.aclose()
        counts = ", ".join(f"{len(v)} {k}" for k, v in snap.objects.items() if v)
        when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        header = [f"kubesched snapshot of {snap.server} at {when}", counts or "no objects"]
        if args.namespace:
            header.append(f"pending pods of namespace {args.namespace} only")
        write_atomically(args.output, snap.documents(), header)
        print(f"{args.output}: {counts or 'no objects'}", file=sys.stderr)

    try:
        asyncio.run(main())
    except SnapshotError as err:
        raise CLIError(f"{err}; nothing was written to {args.output}") from None
    except OSError as err:
        raise CLIError(f"{args.output}: {err}") from None
    return 0
