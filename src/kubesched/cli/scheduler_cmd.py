"""`kubesched scheduler run`: the custom scheduler, on an in-memory cluster file or against an API server."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path

from kubesched.cli import logs
from kubesched.cli.errors import CLIError
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.files import ClusterFileError, read_cluster
from kubesched.cluster.kubeclient import KubeConfigError, connect
from kubesched.config.errors import ConfigParseError
from kubesched.framework.interfaces import Handle
from kubesched.plugins.pod_topology_spread import DEFAULT_SELECTOR_SERVICE
from kubesched.scheduler.config import LIVE_DEFAULT_PROFILE, ConfigError, ProfileConfig, SchedulerConfiguration
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.pluginmanager import Built, build_default, build_from_file
from kubesched.scheduler.queue import ManualClock
from kubesched.scheduler.run import LiveOptions, serve
from kubesched.scheduler.scheduler import Placement, Scheduler

log = logging.getLogger("kubesched.scheduler")


# Feature gates kubesched honours, with kube-scheduler v1.35.4's defaults.
FEATURE_GATES = {"OpportunisticBatching": True}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sched = sub.add_parser("scheduler", help="the custom scheduler")
    sched_sub = sched.add_subparsers(dest="scheduler_command", required=True, metavar="COMMAND")
    run = sched_sub.add_parser(
        "run",
        help="schedule pending pods: of a cluster file in memory (--cluster), or of a live cluster",
        description="Schedule the pods whose spec.schedulerName is one of the configuration's profiles.",
    )
    run.add_argument("--config", type=Path, help="KubeSchedulerConfiguration (v1) file; reloaded when it changes")
    run.add_argument("--cluster", type=Path, help="nodes and pods (YAML/JSON): schedule them in memory and print")
    run.add_argument("-o", "--output", choices=("text", "json"), default="text", help="with --cluster: output format")
    run.add_argument("--kubeconfig", help="kubeconfig of the cluster (default: $KUBECONFIG, else in-cluster)")
    run.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    run.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    run.add_argument("--listen", default="127.0.0.1:10251", help="HOST:PORT of /healthz, /readyz, /metrics")
    run.add_argument("--reload-interval", type=float, default=2.0, help="seconds between checks of --config")
    run.add_argument(
        "--feature-gates",
        default="",
        metavar="GATE=BOOL,...",
        help=f"as kube-scheduler's flag; known: {', '.join(f'{g} (default {d})' for g, d in FEATURE_GATES.items())}",
    )
    run.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    run.add_argument("--log-format", default="json", choices=("json", "text"))
    run.set_defaults(func=run_scheduler)


def config_problem(err: ConfigParseError, path: Path | None) -> CLIError:
    where = f"{path}: " if path else ""
    lines = "\n".join(f"  {e}" for e in err.errors)
    return CLIError(f"{where}invalid scheduler configuration ({len(err.errors)} problem(s)):\n{lines}")


def builder(path: Path | None, live: bool = False) -> Callable[[Callable[[str], Handle]], Built]:
    """How to build the configuration: from --config, else the default profile. Live, a configuration
    that names no profile gets one `kubesched` profile (kube-scheduler serves default-scheduler)."""
    profile = LIVE_DEFAULT_PROFILE if live else None

    def build(make_handle: Callable[[str], Handle]) -> Built:
        if path is not None:
            return build_from_file(path, make_handle, default_profile=profile)
        config = SchedulerConfiguration(profiles=(ProfileConfig(profile),)) if profile else None
        return build_default(make_handle, config)

    return build


def feature_gates(text: str) -> dict[str, bool]:
    """kube-scheduler's --feature-gates syntax (``A=true,B=false``) over the gates kubesched knows."""
    gates = dict(FEATURE_GATES)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise CLIError(f"--feature-gates: missing bool value for {name}")
        if name not in gates:
            raise CLIError(f"--feature-gates: unrecognized feature gate: {name} (known: {', '.join(FEATURE_GATES)})")
        if value.lower() not in ("true", "false"):
            raise CLIError(f"--feature-gates: invalid value of {name}={value}, err: must be true or false")
        gates[name] = value.lower() == "true"
    return gates


def run_scheduler(args: argparse.Namespace) -> int:
    if args.reload_interval <= 0:
        raise CLIError("--reload-interval: must be positive")
    args.gates = feature_gates(args.feature_gates)
    if args.config is not None and not args.config.is_file():
        raise CLIError(f"--config: no such file {args.config}")
    # Check the whole configuration before anything starts: every problem at once, exit 2.
    try:
        builder(args.config, live=args.cluster is None)(Handle)
    except ConfigError as err:
        raise config_problem(err, args.config) from None
    if args.cluster is not None:
        if args.kubeconfig or args.in_cluster:
            raise CLIError("--cluster schedules in memory; it excludes --kubeconfig and --in-cluster")
        return run_in_memory(args)
    logs.setup(args.log_level, args.log_format)
    return run_live(args)


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise CLIError(f"--listen: expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def run_live(args: argparse.Namespace) -> int:
    host, port = _listen(args.listen)
    build = builder(args.config, live=True)
    kubeconfig = args.kubeconfig
    if not kubeconfig and not args.in_cluster:
        # As kube-scheduler: clientConnection.kubeconfig of the file, else $KUBECONFIG, else in-cluster.
        kubeconfig = build(Handle).config.kubeconfig or None
    try:
        conn = connect(None if args.in_cluster else kubeconfig, args.context)
    except (KubeConfigError, OSError) as err:
        raise CLIError(str(err)) from None
    options = LiveOptions(
        conn, build, args.config, host, port, args.reload_interval, batching=args.gates["OpportunisticBatching"]
    )
    try:
        import uvloop

        return uvloop.run(serve(options))
    except ImportError:
        return asyncio.run(serve(options))


def run_in_memory(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="kubesched: %(levelname)s: %(message)s")
    try:
        nodes, pods, workloads = read_cluster(args.cluster)
    except ClusterFileError as err:
        raise CLIError(str(err)) from None

    async def main() -> tuple[list[Placement], list[str]]:
        clock = ManualClock()
        cluster = MemoryCluster(nodes, pods)
        scheduler = Scheduler(
            ClusterCache(),
            cluster,
            builder(args.config),
            clock=clock,
            batching=args.gates["OpportunisticBatching"],
            services={DEFAULT_SELECTOR_SERVICE: workloads.default_selector},  # the file's Services, ReplicaSets…
        )
        cluster.attach(scheduler)
        await run_until_settled(scheduler, clock)
        preempted = [f"{e.regarding} preempted: {e.note}" for e in cluster.events if e.reason == "Preempted"]
        return cluster.placements(), preempted

    placements, preempted = asyncio.run(main())
    if args.output == "json":
        print(json.dumps([{"pod": p.pod, "node": p.node, "reason": p.reason} for p in placements], indent=2))
    else:
        width = max((len(p.pod) for p in placements), default=0)
        for p in placements:
            print(f"{p.pod:<{width}}  -> {p.node}" if p.node else f"{p.pod:<{width}}  not scheduled: {p.reason}")
        for line in preempted:
            print(line)
        placed = sum(1 for p in placements if p.node)
        print(f"{placed}/{len(placements)} pending pod(s) scheduled")
    return 0
