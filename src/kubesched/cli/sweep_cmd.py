"""`kubesched simulate --sweep FILE [--dask ADDRESS] [--workers N]`: a grid of scenarios × configurations,
ranked by the sweep file's objective (docs/simulate.md, "Sweeps")."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path

import msgspec

from kubesched.cli import tables
from kubesched.errors import CLIError
from kubesched.scheduler.sweep.cell import CellResult
from kubesched.scheduler.sweep.execute import (
    DaskUnavailable,
    Prepared,
    missing,
    ordered,
    prepare,
    run_dask,
    run_local,
    run_serial,
)
from kubesched.scheduler.sweep.rank import SweepResult, rank, report, table, text
from kubesched.scheduler.sweep.spec import Sweep, SweepError, read_sweep

log = logging.getLogger("kubesched.sweep")


def add_flags(cmd: argparse.ArgumentParser) -> None:
    group = cmd.add_argument_group("sweeps (docs/simulate.md, Sweeps)")
    group.add_argument(
        "--sweep",
        type=Path,
        metavar="FILE",
        help="run the sweep file's grid of scenarios × configurations and rank the configurations by its objective",
    )
    group.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the cells on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786; kubesched[dask])",
    )
    group.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="local worker processes (default: one per CPU; 1: the cells one after another in this process)",
    )
    # The report of a simulation (`--report`) may be registered already: the sweep writes its own there.
    with contextlib.suppress(argparse.ArgumentError):
        group.add_argument("--report", type=Path, metavar="FILE", help="write an HTML report (self-contained)")


def sweep_flags_alone(args: argparse.Namespace) -> None:
    """--dask and --workers mean something only with --sweep."""
    if args.sweep is None and (args.dask is not None or args.workers):
        raise CLIError("--dask and --workers need --sweep FILE")


def run_sweep(args: argparse.Namespace) -> int:
    if args.scenario is not None or args.compare is not None or args.config is not None:
        raise CLIError("--sweep FILE names its scenarios and configurations: drop --scenario, --config and --compare")
    if args.seed != 0 or args.feature_gates or args.no_records:
        raise CLIError(
            "--sweep FILE names its seed (field seed); --seed, --feature-gates and --no-records are for one simulation"
        )
    if args.workers < 0 or args.workers > 1024:
        raise CLIError(f"--workers: must be from 0 to 1024, not {args.workers}")
    if args.dask is not None and args.workers:
        raise CLIError("--workers is for local processes; with --dask the cluster's workers run the cells")
    try:
        sweep = read_sweep(args.sweep)
        if args.cluster is not None:
            raise CLIError("--sweep FILE names its cluster file (field cluster): drop --cluster")
        version = f"v{args.kubernetes_version.removeprefix('v')}" if args.kubernetes_version else ""
        prepared = prepare(sweep, kubernetes_version=version)
    except SweepError as err:
        raise CLIError(_problems(args.sweep, err)) from None
    kube = prepared.cells[0].kubernetes_version if prepared.cells else ""
    engine, results = _execute(args, prepared)
    lost = missing(prepared, results)
    if lost:  # cannot happen unless an engine lost a result; said rather than ranked short
        raise CLIError(f"the sweep ended without the results of {len(lost)} cell(s): {', '.join(lost[:10])}")
    result = rank(sweep, ordered(prepared, results), engine=engine, kubernetes_version=kube)
    if args.report is not None:
        try:
            args.report.write_text(report(result, sweep.objective.metrics))
        except OSError as err:
            raise CLIError(f"--report {args.report}: cannot write: {err.strerror}") from None
    _print(args, result, sweep)
    return 0


def _execute(args: argparse.Namespace, prepared: Prepared) -> tuple[str, dict[str, CellResult]]:
    def progress(result: CellResult) -> None:
        if result.error:
            log.warning("cell %s: %s", result.id, result.error)

    if args.dask is not None:
        try:
            return f"Dask {args.dask}", asyncio.run(run_dask(prepared, args.dask, progress))
        except DaskUnavailable as err:
            raise CLIError(str(err)) from None
    if args.workers == 1:
        return "1 process", run_serial(prepared, progress)
    workers = args.workers or None
    with tables.progress(f"{len(prepared.cells)} cells"):
        results = asyncio.run(run_local(prepared, workers or 0, progress))
    count = workers or os.cpu_count() or 1
    return f"{count} local processes", results


def _print(args: argparse.Namespace, result: SweepResult, sweep: Sweep) -> None:
    if args.output == "json":
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(result), indent=2).decode() + "\n")
        return
    header, rows = table(result, sweep.objective.metrics)
    if not tables.table(header, rows, title=f"{result.objective} ({result.engine})"):
        sys.stdout.write(text(result, sweep.objective.metrics))


def _problems(path: Path, err: SweepError) -> str:
    if not err.errors:
        return str(err)
    count = f"{len(err.errors)} problem" + ("s" if len(err.errors) != 1 else "")
    lines = "\n".join(f"  {e}" for e in err.errors[:50])
    more = f"\n  … {len(err.errors) - 50} more" if len(err.errors) > 50 else ""
    return f"{path} is invalid ({count}):\n{lines}{more}"
