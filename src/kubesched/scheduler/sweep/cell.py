"""One cell of a sweep: one scenario under one configuration, simulated in the process that runs it.

`run_cell` is what a worker runs (a process of the local pool, or a Dask worker): a plain function of
picklable values, the files given as bytes (a Dask worker on another machine sees none of the user's files),
so a cell's result depends on nothing but its arguments. Running it twice (Dask reruns the tasks of a worker
it lost) gives the same result; the sweep keeps one per cell id.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from kubesched.cluster.files import read_cluster
from kubesched.config.check import validate_configuration
from kubesched.config.profiles import SchedulerConfiguration, read
from kubesched.errors import ConfigurationError, KubeschedError
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.profiles.manager import PluginSource, load_registry
from kubesched.scheduler.profiles.manager import build as build_profiles
from kubesched.scheduler.simulate.model import Aggregate
from kubesched.scheduler.simulate.play import Options, simulate
from kubesched.scheduler.simulate.scenario import read_scenario
from kubesched.versions import REFERENCE, Release, parse_release


class Cell(msgspec.Struct, frozen=True, kw_only=True):
    """Scenario ``scenario`` (its index) under configuration ``config`` (its id); ``id`` is both."""

    id: str  # e.g. "s0/c3"
    config: str
    scenario: int
    document: dict[str, Any]  # the KubeSchedulerConfiguration
    cluster_name: str  # the files' names (as the user wrote them), for messages and the file type
    scenario_name: str
    seed: int = 0
    kubernetes_version: str = ""
    delay: float = 0.0  # seconds slept before simulating: tests make cells slow enough to kill a worker mid-cell


class CellResult(msgspec.Struct, frozen=True, kw_only=True):
    """A cell's numbers after the scenario's last step (`metrics`), or why it could not run (`error`)."""

    id: str
    config: str
    scenario: int
    metrics: dict[str, float] = msgspec.field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0
    worker: str = ""  # host:pid of the process that computed it


def metrics(agg: Aggregate) -> dict[str, float]:
    """The objective's vocabulary (docs/simulate.md, "Sweeps"): counts, and per resource its spread
    (requested/allocatable over the schedulable nodes: p50, p99, mean, max, spread = p99 - p50) and, for
    extended resources, fragmentation (stranded, partiallyUsedNodes, largestFree, free)."""
    out: dict[str, float] = {
        "podsPlaced": agg.pods_placed,
        "podsPending": agg.pods_pending,
        "podsBound": agg.pods_bound,
        "nodesUsed": agg.nodes_used,
        "nodes": agg.nodes,
        "preemptions": agg.preemptions,
    }
    for s in agg.spread:
        out |= {f"{s.resource}.p50": s.p50, f"{s.resource}.p99": s.p99, f"{s.resource}.mean": s.mean}
        out |= {f"{s.resource}.max": s.max, f"{s.resource}.spread": round(s.p99 - s.p50, 4)}
    for f in agg.fragmentation:
        out |= {f"{f.resource}.stranded": f.stranded, f"{f.resource}.partiallyUsedNodes": f.partially_used}
        out |= {f"{f.resource}.largestFree": f.largest_free, f"{f.resource}.free": f.free}
    return out


def checked_configuration(document: dict[str, Any], release: Release) -> SchedulerConfiguration:
    """The configuration of a cell, validated as `config validate` does (every profile built once);
    ConfigurationError lists its problems with their field paths."""
    config, errors = read(document, None, release=release)
    if config is None or errors:
        raise ConfigurationError(errors=errors)
    verdict = validate_configuration(config, PluginSource(), release=release, build=True)
    if verdict.config is None or verdict.refusals:
        raise ConfigurationError(errors=verdict.refusals)
    return verdict.config


def release_of(version: str) -> Release:
    return parse_release(version) if version else REFERENCE


def run_cell(cell: Cell, files: dict[str, bytes]) -> CellResult:
    """Simulate ``cell`` (``files``: "cluster" and "scenario/<index>" as bytes); a cell that cannot run is a
    result with its ``error``, not an exception."""
    if cell.delay > 0:
        time.sleep(cell.delay)
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="kubesched-sweep-"))
    try:
        cluster = workdir / ("cluster" + Path(cell.cluster_name).suffix)
        cluster.write_bytes(files["cluster"])
        scenario_path = workdir / ("scenario" + Path(cell.scenario_name).suffix)
        scenario_path.write_bytes(files[f"scenario/{cell.scenario}"])
        agg = asyncio.run(_simulate(cell, cluster, scenario_path))
        result: dict[str, Any] = {"metrics": metrics(agg)}
    except KubeschedError as err:
        result = {"error": " ".join(str(err).replace(str(workdir) + os.sep, "").split())[:2000]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return CellResult(
        id=cell.id,
        config=cell.config,
        scenario=cell.scenario,
        seconds=round(time.perf_counter() - started, 4),
        worker=f"{os.uname().nodename}:{os.getpid()}",
        **result,
    )


async def _simulate(cell: Cell, cluster: Path, scenario_path: Path) -> Aggregate:
    release = release_of(cell.kubernetes_version)
    config = checked_configuration(cell.document, release)

    def build(make_handle: Callable[[str], Handle]) -> Built:
        registry, load_errors = load_registry(config.plugin_modules)
        return build_profiles(config, registry, make_handle, load_errors, release)

    gates = {name: default for name, default, _ in release.feature_gates}
    options = Options(seed=cell.seed, records=False, batching=gates.get("OpportunisticBatching", True))
    sim = await simulate(
        read_scenario(scenario_path),
        read_cluster(cluster),
        [(cell.config, build)],
        options,
        kubernetes_version=f"v{release.version}",
        cluster=cell.cluster_name,
        scenario_file=cell.scenario_name,
    )
    run = sim.runs[0]
    agg = run.steps[-1].aggregate if run.steps else run.initial_aggregate
    if agg is None:
        raise KubeschedError("the simulation recorded no aggregate")
    return agg
