"""Running a sweep's cells: on a local process pool driven from asyncio (the default), or on an existing Dask
cluster (`distributed.Client`, asynchronous, on the same event loop).

Everything a cell reads travels with it (the files as bytes, the configuration as a document), so a worker
needs kubesched installed and nothing else. Results are kept by cell id: a cell Dask computes twice (it
reruns the tasks of a worker it lost) is counted once, and a sweep ends with exactly one result per cell.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kubesched.cluster.files import MAX_FILE_BYTES, read_cluster
from kubesched.errors import ConfigurationError, FieldError, KubeschedError, index
from kubesched.scheduler.simulate.scenario import read_scenario
from kubesched.scheduler.sweep.cell import Cell, CellResult, checked_configuration, release_of, run_cell
from kubesched.scheduler.sweep.spec import Sweep, SweepError

OnResult = Callable[[CellResult], None]


class DaskUnavailable(KubeschedError):
    """--dask without the optional extra installed, or an address no scheduler answers at."""


@dataclass(frozen=True)
class Prepared:
    cells: list[Cell]
    files: dict[str, bytes]


def prepare(sweep: Sweep, *, kubernetes_version: str = "", delay: float = 0.0) -> Prepared:
    """The cells of ``sweep``, every input checked here first (the cluster file, each scenario, each
    configuration, as `simulate` and `config validate` check them): a problem is one SweepError with its
    field path, before any cell runs."""
    version = kubernetes_version or sweep.kubernetes_version
    try:
        release = release_of(version)
    except KubeschedError as err:
        raise SweepError(errors=[FieldError("kubernetesVersion", str(err))]) from None
    errors: list[FieldError] = []
    try:
        read_cluster(sweep.cluster)
    except KubeschedError as err:
        errors.append(FieldError("cluster", str(err)))
    for i, path in enumerate(sweep.scenarios):
        try:
            read_scenario(path)
        except ConfigurationError as err:
            errors.extend(FieldError(index("scenarios", i), str(e)) for e in err.errors or [err])
    for c in sweep.configurations:
        try:
            checked_configuration(c.document, release)
        except ConfigurationError as err:
            at = f"configuration {c.id} ({c.label})"
            errors.extend(
                FieldError(at, f"config.{e}" if isinstance(e, FieldError) else str(e)) for e in err.errors or [err]
            )
        if len(errors) > 50:
            break
    if errors:
        raise SweepError(errors=errors)
    files = {"cluster": _bytes(sweep.cluster)}
    files |= {f"scenario/{i}": _bytes(p) for i, p in enumerate(sweep.scenarios)}
    cells = [
        Cell(
            id=f"s{i}/{c.id}",
            config=c.id,
            scenario=i,
            document=c.document,
            cluster_name=str(sweep.cluster),
            scenario_name=str(path),
            seed=sweep.seed,
            kubernetes_version=f"v{release.version}",
            delay=delay,
        )
        for i, path in enumerate(sweep.scenarios)
        for c in sweep.configurations
    ]
    return Prepared(cells, files)


def _bytes(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.read(MAX_FILE_BYTES + 1)


def _keep(results: dict[str, CellResult], result: CellResult, on_result: OnResult | None) -> None:
    if result.id in results:  # computed twice (a lost worker's task rerun): the first stands
        return
    results[result.id] = result
    if on_result is not None:
        on_result(result)


async def run_local(prepared: Prepared, workers: int = 0, on_result: OnResult | None = None) -> dict[str, CellResult]:
    """Every cell on a pool of ``workers`` processes (0: one per CPU), spawned fresh (never forked from a
    process with an event loop and threads)."""
    count = workers or os.cpu_count() or 1
    loop = asyncio.get_running_loop()
    results: dict[str, CellResult] = {}
    with ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = [loop.run_in_executor(pool, run_cell, cell, prepared.files) for cell in prepared.cells]
        for next_done in asyncio.as_completed(pending):
            _keep(results, await next_done, on_result)
    return results


def run_serial(prepared: Prepared, on_result: OnResult | None = None) -> dict[str, CellResult]:
    """Every cell one after another in this process (`--workers 1`, and the benchmark's baseline)."""
    results: dict[str, CellResult] = {}
    for cell in prepared.cells:
        _keep(results, run_cell(cell, prepared.files), on_result)
    return results


async def run_dask(
    prepared: Prepared, address: str, on_result: OnResult | None = None, connect_timeout: float = 30.0
) -> dict[str, CellResult]:
    """Every cell on the Dask cluster whose scheduler is at ``address`` (tcp://host:8786): the files are sent
    to the workers once (scattered, broadcast), each cell is one task keyed by its id."""
    try:
        from distributed import Client, KilledWorker, as_completed
        from distributed.comm.core import CommClosedError
    except ImportError:
        raise DaskUnavailable("--dask needs the optional extra: pip install 'kubesched[dask]'") from None
    try:
        client = await Client(address, asynchronous=True, timeout=connect_timeout)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as err:
        raise DaskUnavailable(f"--dask {address}: no Dask scheduler answers: {err}") from None
    results: dict[str, CellResult] = {}
    try:
        files = await client.scatter(prepared.files, broadcast=True, hash=False)
        token = os.urandom(6).hex()  # this run's keys: a cluster shared by several sweeps keeps them apart
        futures = {
            client.submit(run_cell, cell, files, key=f"kubesched-sweep-{token}-{cell.id}", pure=False): cell.id
            for cell in prepared.cells
        }
        async for future in as_completed(futures):  # type: ignore[no-untyped-call]
            try:
                _keep(results, await future, on_result)
            except KilledWorker:
                raise DaskUnavailable(
                    f"cell {futures[future]}: the Dask workers running it died more often than the scheduler allows "
                    f"(distributed.scheduler.allowed-failures); {len(results)} of {len(futures)} cells done"
                ) from None
    except (CommClosedError, OSError) as err:
        raise DaskUnavailable(f"--dask {address}: lost the Dask scheduler: {err}") from None
    finally:
        await client.close()
    return results


def missing(prepared: Prepared, results: dict[str, CellResult]) -> list[str]:
    return [c.id for c in prepared.cells if c.id not in results]


def ordered(prepared: Prepared, results: dict[str, CellResult]) -> list[CellResult]:
    """The results in the cells' order (scenario, then configuration): the same whatever ran them."""
    return [results[c.id] for c in prepared.cells if c.id in results]
