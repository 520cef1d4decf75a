"""`kubesched scheduler run`: the custom scheduler, on an in-memory cluster file or against an API server."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

from kubesched.cli import connection, kube_version, logs
from kubesched.cli.plugins_cmd import add_plugins_from_flag, image_only
from kubesched.cli.scheduler_dry_run import run_in_memory
from kubesched.cli.scheduler_live import LiveOptions, serve
from kubesched.config.check import validate_configuration, validate_file
from kubesched.config.duration import Duration
from kubesched.config.profiles import (
    DEFAULT_LEASE_NAME,
    DEFAULT_LEASE_NAMESPACE,
    LIVE_DEFAULT_PROFILE,
    LeaderElectionConfig,
    SchedulerConfiguration,
    default_configuration,
)
from kubesched.errors import CLIError, ConfigurationError, FieldError
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.decisions import DEFAULT_RECORDS
from kubesched.scheduler.profiles.manager import Built, PluginSource, load_registry
from kubesched.scheduler.profiles.manager import build as build_profiles
from kubesched.versions import REFERENCE, Release

log = logging.getLogger("kubesched.scheduler")


# Feature gates kubesched honours, with kube-scheduler's defaults (the same in every supported release).
FEATURE_GATES = {name: default for name, default, _ in REFERENCE.feature_gates}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sched = sub.add_parser("scheduler", help="the custom scheduler")
    sched_sub = sched.add_subparsers(dest="scheduler_command", required=True, metavar="COMMAND")
    sched.description = "The custom scheduler: kube-scheduler's plugin pipeline, in Python."
    sched.epilog = "Example:\n  kubesched scheduler run --cluster examples/cluster.yaml\n"
    sched.formatter_class = argparse.RawDescriptionHelpFormatter
    run = sched_sub.add_parser(
        "run",
        help="schedule pending pods: of a cluster file in memory (--cluster), or of a live cluster",
        description="Schedule the pods whose spec.schedulerName is one of the configuration's profiles: "
        "of a cluster file in memory (--cluster, prints where each pod went), or of a live cluster.",
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--config", type=Path, help="KubeSchedulerConfiguration (v1) file; reloaded when it changes")
    run.add_argument("--cluster", type=Path, help="nodes and pods (YAML/JSON): schedule them in memory and print")
    run.add_argument("-o", "--output", choices=("text", "json"), default="text", help="with --cluster: output format")
    connection.add_flags(run, what="the cluster (over the --config file's clientConnection.kubeconfig)")
    run.add_argument(
        "--fail-on-pending",
        action="store_true",
        help="with --cluster: exit 1 when any pod stays pending (for CI; 2 stays usage and input errors)",
    )
    run.add_argument(
        "--listen", default=None, help="HOST:PORT of /healthz, /readyz, /metrics (default 127.0.0.1:10251)"
    )
    run.add_argument("--bind-address", help="as kube-scheduler's: the host of --listen (served over plain HTTP)")
    run.add_argument("--secure-port", type=int, help="as kube-scheduler's: the port of --listen (plain HTTP here)")
    le = run.add_argument_group(
        "leader election", "as kube-scheduler's flags: each one given overrides the --config file's leaderElection"
    )
    le.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="take a Lease before scheduling (default true; --leader-elect=false to run alone)",
    )
    for flag, what in (
        ("--leader-elect-lease-duration", "how long non-leaders wait before taking over (Go duration; default 15s)"),
        ("--leader-elect-renew-deadline", "how long the leader retries renewing before it stops (default 10s)"),
        ("--leader-elect-retry-period", "the wait between tries to take or renew the Lease (default 2s)"),
    ):
        le.add_argument(flag, type=_duration, metavar="DURATION", help=what)
    le.add_argument(
        "--leader-elect-resource-name", metavar="NAME", help=f"the Lease's name (default {DEFAULT_LEASE_NAME})"
    )
    le.add_argument(
        "--leader-elect-resource-namespace",
        metavar="NS",
        help=f"the Lease's namespace (default {DEFAULT_LEASE_NAMESPACE})",
    )
    run.add_argument("--reload-interval", type=float, default=2.0, help="seconds between checks of --config")
    run.add_argument(
        "--decision-records",
        type=int,
        default=DEFAULT_RECORDS,
        metavar="N",
        help=f"keep the last decision of N pods, served on --listen at /debug/decisions/NAMESPACE/NAME for "
        f"`kubesched explain --scheduler` (default {DEFAULT_RECORDS}; about 0.5 kB each; 0: keep none)",
    )
    add_plugins_from_flag(run, "the config's pluginModules (at start and on every reload)")
    run.add_argument(
        "--feature-gates",
        default="",
        metavar="GATE=BOOL,...",
        help=f"as kube-scheduler's flag; known: {', '.join(f'{g} (default {d})' for g, d in FEATURE_GATES.items())}",
    )
    kube_version.add_flag(run, connected=True)
    logs.add_flags(run)
    run.set_defaults(func=run_scheduler)


RUN_EXAMPLES = """\
Examples:
  # Schedule a cluster file in memory and print where each pod went (JSON with -o json):
  kubesched scheduler run --cluster examples/cluster.yaml
  # In CI: fail (exit 1) when a pod stays pending:
  kubesched scheduler run --cluster examples/cluster.yaml --fail-on-pending
  # Against a cluster, as kube-scheduler is run:
  kubesched scheduler run --config examples/scheduler-config.yaml --kubeconfig ~/.kube/config --leader-elect=false -v 2
"""


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "t"):
        return True
    if text.lower() in ("false", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (true or false)")


def _duration(text: str) -> float:
    try:
        return Duration.parse(text).total_seconds()
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def leader_election(args: argparse.Namespace, le: LeaderElectionConfig) -> LeaderElectionConfig:
    """The file's leaderElection with the flags given laid over it (kube-scheduler's ApplyLeaderElectionTo:
    with or without --config, a leader-election flag that was set wins), checked by client-go's rules."""
    given = {
        "leader_elect": args.leader_elect,
        "lease_duration": args.leader_elect_lease_duration,
        "renew_deadline": args.leader_elect_renew_deadline,
        "retry_period": args.leader_elect_retry_period,
        "resource_name": args.leader_elect_resource_name,
        "resource_namespace": args.leader_elect_resource_namespace,
    }
    out = dataclasses.replace(le, **{k: v for k, v in given.items() if v is not None})
    if out.leader_elect:
        # client-go's leaderelection.NewLeaderElector rules, over the values in force (ConfigurationError: a reload
        # of the file that breaks them is refused as any invalid configuration is).
        problems = []
        if min(out.lease_duration, out.renew_deadline, out.retry_period) <= 0:
            problems.append("durations must be greater than zero")
        if out.lease_duration <= out.renew_deadline:
            problems.append("leaseDuration must be greater than renewDeadline")
        if out.renew_deadline <= 1.2 * out.retry_period:
            problems.append("renewDeadline must be greater than 1.2 × retryPeriod")
        if problems:
            raise ConfigurationError(
                errors=[FieldError("leaderElection (file and --leader-elect-* flags)", p) for p in problems]
            )
    return out


def config_problem(err: ConfigurationError, path: Path | None) -> CLIError:
    # The words of `config validate`, which runs the same validator.
    count = f"{len(err.errors)} problem" + ("s" if len(err.errors) != 1 else "")
    lines = "\n".join(f"  {e}" for e in err.errors)
    return CLIError(f"{path or 'the configuration'} is invalid ({count}):\n{lines}")


def read_config(
    path: Path | None,
    live: bool = False,
    args: argparse.Namespace | None = None,
    plugins: PluginSource | None = None,
) -> tuple[SchedulerConfiguration, list[FieldError]]:
    """The configuration and every problem the one validator (`config.check`, as `config validate`) finds in
    it before building: from --config, else the default profile; live, a configuration that names no profile gets one
    `kubesched` profile (kube-scheduler serves default-scheduler); the leader-election flags laid over it.
    ``plugins``: where its plugins come from (default: as --plugins-from says)."""
    profile = LIVE_DEFAULT_PROFILE if live else None
    release = config_release(args)
    plugins = plugins or PluginSource(installed_only=image_only(args))
    # Not built here: the caller builds it (`builder`) with the same PluginSource.build, hence the same problems.
    if path is None:
        verdict = validate_configuration(default_configuration(profile), plugins, release=release, build=False)
    else:
        verdict = validate_file(path, plugins, release=release, default_profile=profile, build=False)
    if verdict.config is None:
        raise ConfigurationError(errors=verdict.refusals)
    config, errors = verdict.config, verdict.refusals
    for w in verdict.warnings:
        log.warning("configuration: %s", w)
    if args is not None and hasattr(args, "leader_elect"):  # commands that elect no leader (explain) have no flags
        try:
            le = leader_election(args, config.leader_election)
        except ConfigurationError as err:
            errors = [*errors, *err.errors]
        else:
            config = dataclasses.replace(config, leader_election=le)
    return config, errors


def config_release(args: argparse.Namespace | None) -> Release:
    """The kube-scheduler release whose configuration rules apply (``--kubernetes-version`` where it exists)."""
    chosen = kube_version.selected(args) if args is not None else None
    return chosen or REFERENCE


def builder(
    config: SchedulerConfiguration,
    errors: list[FieldError],
    release: Release = REFERENCE,
    installed_only: bool = False,
) -> Callable[[Callable[[str], Handle]], Built]:
    """How to build a configuration as read: its plugins loaded (user modules imported; with ``installed_only``,
    --plugins-from image, only installed ones) and every profile built with the handles the caller gives, with
    ``release``'s default plugins and semantics; ConfigurationError lists ``errors`` and every problem building
    finds."""

    def build(make_handle: Callable[[str], Handle]) -> Built:
        if errors:  # the validator's verdict; building then would only repeat it in other words
            raise ConfigurationError(errors=errors)
        registry, load_errors = load_registry(config.plugin_modules, installed_only=installed_only)
        return build_profiles(config, registry, make_handle, load_errors, release)

    return build


def rereader(
    path: Path, live: bool, args: argparse.Namespace | None, release: Release = REFERENCE
) -> Callable[[Callable[[str], Handle]], Built]:
    """A reload: read the file again and build it."""
    return lambda make_handle: builder(*read_config(path, live, args), release, image_only(args))(make_handle)


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
    if args.decision_records < 0:
        raise CLIError(f"--decision-records: {args.decision_records} must be 0 or more")
    args.gates = feature_gates(args.feature_gates)
    kube_version.selected(args)  # an unsupported --kubernetes-version stops here, before anything
    if args.config is not None and not args.config.is_file():
        raise CLIError(f"--config: no such file {args.config}")
    if args.cluster is not None and (args.kubeconfig or args.in_cluster):
        raise CLIError("--cluster schedules in memory; it excludes --kubeconfig and --in-cluster")
    # Read once; built once, by the scheduler. Every problem is reported at once, exit 2, before anything starts.
    try:
        config, errors = read_config(args.config, live=args.cluster is None, args=args)
        if errors:
            raise ConfigurationError(errors=errors)
    except ConfigurationError as err:
        raise config_problem(err, args.config) from None
    try:
        if args.cluster is not None:
            return run_in_memory(args, builder(config, [], kube_version.release(args), image_only(args)))
        logs.setup(args.log_level, args.log_format, args.v)
        return run_live(args, config)
    except ConfigurationError as err:
        raise config_problem(err, args.config) from None


def _listen(args: argparse.Namespace) -> tuple[str, int]:
    """--listen, or kube-scheduler's --bind-address/--secure-port (which one may not mix with it)."""
    if args.listen is not None and (args.bind_address is not None or args.secure_port is not None):
        raise CLIError("--listen excludes --bind-address and --secure-port (they are its two halves)")
    host, sep, port = (args.listen or "127.0.0.1:10251").rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise CLIError(f"--listen: expected HOST:PORT, got {args.listen!r}")
    if args.secure_port is not None:
        if not 0 < args.secure_port < 65536:
            raise CLIError(f"--secure-port: {args.secure_port} must be between 1 and 65535")
        port = str(args.secure_port)
    if args.bind_address is not None:
        host = args.bind_address
    return host.strip("[]") or "0.0.0.0", int(port)


def run_live(args: argparse.Namespace, config: SchedulerConfiguration) -> int:
    host, port = _listen(args)
    # As kube-scheduler: --kubeconfig, else the file's clientConnection.kubeconfig; then the loading rule.
    conn = connection.connection(args, args.kubeconfig or ("" if args.in_cluster else config.kubeconfig or ""))
    # --kubernetes-version, else the server's /version (the nearest supported release).
    release = kube_version.for_connection(args, conn)
    options = LiveOptions(
        conn,
        config,
        builder(config, [], release, image_only(args)),
        rereader(args.config, True, args, release) if args.config is not None else None,
        args.config,
        host,
        port,
        args.reload_interval,
        batching=args.gates["OpportunisticBatching"],
        release=release,
        decision_records=args.decision_records,
    )
    try:
        import uvloop

        return uvloop.run(serve(options))
    except ImportError:
        return asyncio.run(serve(options))
