"""`kubesched simulate`: a scenario of steps played on a cluster file, under one configuration or two compared."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from kubesched.cli import kube_version, sweep_cmd
from kubesched.cli.plugins_cmd import add_plugins_from_flag, image_only
from kubesched.cli.scheduler_cmd import FEATURE_GATES, builder, config_problem, feature_gates, read_config
from kubesched.cluster.defaulting import DefaultingError
from kubesched.cluster.files import ClusterFileError, read_cluster
from kubesched.errors import CLIError, ConfigurationError
from kubesched.framework.guard import FrameworkError
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.simulate.actions import SimulationError
from kubesched.scheduler.simulate.play import Options, simulate
from kubesched.scheduler.simulate.render import text
from kubesched.scheduler.simulate.scenario import ScenarioError, read_scenario

Builder = Callable[[Callable[[str], Handle]], Built]

DESCRIPTION = """\
Play a scenario on a cluster file with the embedded scheduler: steps that add nodes ("10 like this one, 30%
used"), add pods (a Deployment's replicas of a template), drain or remove nodes, delete pods and replay the
file's pending pods (docs/simulate.md). Deterministic: a manual clock and tie-breaks seeded by --seed, so the
same seed gives the same placements. Each step records every pod's decision (its node, or kube-scheduler's
FailedScheduling message), the preemptions, and each node's requested and allocatable resources.

--compare B plays the same scenario under a second configuration and reports the differences, pod by pod
and in aggregate (pods placed, nodes used, utilization spread, fragmentation of extended resources,
preemptions). -o json writes the result (apiVersion kubesched.io/v1alpha1, kind Simulation).
"""

EPILOG = """\
Examples:
  kubesched simulate --cluster examples/cluster.yaml --scenario examples/scenario.yaml
  kubesched simulate --cluster examples/cluster.yaml --scenario examples/scenario.yaml \\
      --compare examples/scheduler-config.yaml -o json
  kubesched simulate --sweep examples/sweep.yaml              # a grid of configurations, ranked (local processes)
  kubesched simulate --sweep examples/sweep.yaml --dask tcp://dask-scheduler:8786 --report sweep.html
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser(
        "simulate",
        help="play a scenario (add/remove nodes and pods in steps) on a cluster file; compare two configurations",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("--cluster", type=Path, metavar="FILE", help="a cluster file (nodes, pods, …)")
    cmd.add_argument("--scenario", type=Path, metavar="FILE", help="the scenario (docs/simulate.md)")
    cmd.add_argument("--config", type=Path, help="KubeSchedulerConfiguration A (default: kube-scheduler's defaults)")
    cmd.add_argument("--compare", type=Path, metavar="B", help="a second configuration, compared with A")
    cmd.add_argument("--seed", type=int, default=0, help="seed of the tie-breaks between equal nodes (default 0)")
    cmd.add_argument(
        "--no-records",
        action="store_true",
        help="aggregates only: no per-pod decisions nor per-node states (big runs, faster)",
    )
    cmd.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format (default text)")
    cmd.add_argument(
        "--report",
        type=Path,
        metavar="OUT.html",
        help="also write a self-contained HTML report there (heat maps, pending pods, A/B: docs/simulate.md)",
    )
    cmd.add_argument(
        "--feature-gates",
        default="",
        metavar="GATE=BOOL,...",
        help=f"as kube-scheduler's flag; known: {', '.join(FEATURE_GATES)}",
    )
    kube_version.add_flag(cmd)
    add_plugins_from_flag(cmd, "the configurations' pluginModules")
    sweep_cmd.add_flags(cmd)
    cmd.set_defaults(func=run_simulate)


def _build(path: Path | None, args: argparse.Namespace, flag: str) -> tuple[str, Builder]:
    if path is not None and not path.is_file():
        raise CLIError(f"{flag}: no such file {path}")
    try:
        config, errors = read_config(path, False, args)
    except ConfigurationError as err:
        raise config_problem(err, path) from None
    if errors:
        raise config_problem(ConfigurationError(errors=errors), path)
    return str(path or ""), builder(config, [], kube_version.release(args), image_only(args))


def run_simulate(args: argparse.Namespace) -> int:
    if args.sweep is not None:
        return sweep_cmd.run_sweep(args)
    sweep_cmd.sweep_flags_alone(args)
    if args.cluster is None or args.scenario is None:
        raise CLIError("--cluster FILE and --scenario FILE are required (or --sweep FILE)")
    logging.basicConfig(level=logging.WARNING, format="kubesched: %(levelname)s: %(message)s")
    release = kube_version.release(args)
    gates = feature_gates(args.feature_gates)
    builds = [_build(args.config, args, "--config")]
    if args.compare is not None:
        builds.append(_build(args.compare, args, "--compare"))
    try:
        scenario = read_scenario(args.scenario)
    except ScenarioError as err:
        raise CLIError(_problems(args.scenario, err)) from None
    try:
        found = read_cluster(args.cluster)
    except ClusterFileError as err:
        raise CLIError(str(err)) from None
    for warning in found.warnings:
        logging.getLogger("kubesched.cluster").warning("%s", warning)
    options = Options(seed=args.seed, records=not args.no_records, batching=gates["OpportunisticBatching"])
    try:
        sim = asyncio.run(
            simulate(
                scenario,
                found,
                builds,
                options,
                kubernetes_version=f"v{release.version}",
                cluster=str(args.cluster),
                scenario_file=str(args.scenario),
            )
        )
    except ScenarioError as err:
        raise CLIError(_problems(args.scenario, err)) from None
    except (SimulationError, DefaultingError) as err:
        raise CLIError(f"{args.scenario}: {err}") from None
    except ConfigurationError as err:
        raise config_problem(err, args.config) from None
    except FrameworkError as err:
        raise CLIError(f"simulating: {err}") from None
    if args.report is not None:
        from kubesched.scheduler.report.simulation import write_report  # plotly: only for a report

        try:
            write_report(sim, args.report)
        except OSError as err:
            raise CLIError(f"--report: cannot write {args.report}: {err.strerror or err}") from None
    if args.output == "json":
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(sim), indent=2).decode() + "\n")
    else:
        sys.stdout.write(text(sim))
    return 0


def _problems(path: Path, err: ScenarioError) -> str:
    if not err.errors:
        return str(err)
    count = f"{len(err.errors)} problem" + ("s" if len(err.errors) != 1 else "")
    lines = "\n".join(f"  {e}" for e in err.errors[:50])
    more = f"\n  … {len(err.errors) - 50} more" if len(err.errors) > 50 else ""
    return f"{path} is invalid ({count}):\n{lines}{more}"
