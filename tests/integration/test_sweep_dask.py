"""`simulate --sweep` on a real Dask cluster (distributed.LocalCluster: a scheduler and two worker processes
under nannies): the same table as local processes, and a worker killed mid-sweep costs nothing but time —
every cell is in the result exactly once and the ranking is unchanged."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import pytest
import yaml
from distributed import Client, LocalCluster

from kubesched.scheduler.sweep.cell import CellResult
from kubesched.scheduler.sweep.execute import DaskUnavailable, ordered, prepare, run_dask, run_serial
from kubesched.scheduler.sweep.rank import rank
from kubesched.scheduler.sweep.spec import read_sweep

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
SCENARIO = str(ROOT / "examples" / "scenario.yaml")


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


def write_sweep(tmp_path: Path) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubesched.io/v1alpha1",
                "kind": "Sweep",
                "metadata": {"name": "dask"},
                "cluster": CLUSTER,
                "scenarios": [SCENARIO],
                "axes": {
                    "weights": {"NodeResourcesFit": [1, 5, 20], "NodeResourcesBalancedAllocation": [1, 5]},
                    "pluginArgs": {
                        "NodeResourcesFit": [
                            {"scoringStrategy": {"type": t}} for t in ("LeastAllocated", "MostAllocated")
                        ]
                    },
                },
                "objective": {"maximize": {"podsPlaced": 1, "nodesUsed": -0.5}},
            }
        )
    )
    return path


def table_of(result: Any) -> list[tuple[Any, ...]]:
    return [(r.rank, r.id, r.objective, r.metrics) for r in result.configurations]


def test_a_worker_killed_mid_sweep_every_cell_once_ranking_unchanged(tmp_path: Path, cluster: LocalCluster) -> None:
    sweep = read_sweep(write_sweep(tmp_path))
    baseline = rank(sweep, ordered(prepare(sweep), run_serial(prepare(sweep))), engine="1", kubernetes_version="v")
    with Client(cluster) as admin:
        pids: dict[str, int] = admin.run(os.getpid)
    assert len(pids) == 2
    victim = sorted(pids.values())[0]
    arrived: list[CellResult] = []
    killed_at: list[int] = []

    def on_result(result: CellResult) -> None:
        arrived.append(result)
        if not killed_at:  # both workers are in a cell (0.6 s each): kill one of them in the middle of it
            os.kill(victim, signal.SIGKILL)
            killed_at.append(len(arrived))

    prepared = prepare(sweep, delay=0.6)
    results = asyncio.run(run_dask(prepared, cluster.scheduler_address, on_result))
    assert killed_at == [1]
    assert sorted(results) == sorted(c.id for c in prepared.cells) and len(arrived) == len(prepared.cells) == 12
    assert all(not r.error for r in results.values())
    with Client(cluster) as admin:
        deadline = time.monotonic() + 30
        while len(now := admin.run(os.getpid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    assert victim not in now.values()  # it was killed (its nanny started a new one)
    # Dask sent the cells the dead worker held to the other one again: those were computed twice, kept once.
    started = Counter(
        str(t.key)
        for t in cluster.scheduler.transition_log
        if t.finish == "processing" and "kubesched-sweep-" in str(t.key)
    )
    assert len(started) == 12 and max(started.values()) >= 2, started
    got = rank(sweep, ordered(prepared, results), engine="dask", kubernetes_version="v")
    assert table_of(got) == table_of(baseline)
    assert [r.id for r in got.cells] == [c.id for c in prepared.cells]


def test_the_command_on_dask_prints_the_table_local_processes_print(tmp_path: Path, cluster: LocalCluster) -> None:
    path = write_sweep(tmp_path)
    argv = [sys.executable, "-m", "kubesched", "simulate", "--sweep", str(path), "-o", "json"]
    local = subprocess.run([*argv, "--workers", "2"], capture_output=True, text=True, timeout=300, check=True)
    report = tmp_path / "report.html"
    dask = subprocess.run(
        [*argv, "--dask", cluster.scheduler_address, "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    a, b = json.loads(local.stdout), json.loads(dask.stdout)
    assert a["engine"] == "2 local processes" and b["engine"] == f"Dask {cluster.scheduler_address}"

    def table(doc: dict[str, Any]) -> list[Any]:
        return [(c["rank"], c["id"], c["objective"], c["metrics"]) for c in doc["configurations"]]

    assert table(a) == table(b) and len(table(a)) == 12
    assert [c["id"] for c in a["cells"]] == [c["id"] for c in b["cells"]]
    page = report.read_text()
    assert page.count("<tr>") == 1 + 12 + 1 + 12 and b["configurations"][0]["label"] in page


def test_an_address_nobody_answers_is_one_clear_error(tmp_path: Path) -> None:
    sweep = read_sweep(write_sweep(tmp_path))
    with pytest.raises(DaskUnavailable, match=r"--dask tcp://127.0.0.1:9: no Dask scheduler answers"):
        asyncio.run(run_dask(prepare(sweep), "tcp://127.0.0.1:9", connect_timeout=2))


def test_a_cell_whose_workers_keep_dying_is_one_clear_error(tmp_path: Path) -> None:
    sweep = read_sweep(write_sweep(tmp_path))
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
    ):
        with Client(cluster) as admin:
            pids: dict[str, int] = admin.run(os.getpid)
        killed: list[int] = []

        def on_result(result: CellResult) -> None:
            if not killed:  # the other worker is in a cell: with no failure allowed, that cell is lost
                victim = next(pid for pid in pids.values() if not result.worker.endswith(f":{pid}"))
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        with pytest.raises(
            DaskUnavailable,
            match=r"^cell s0/c\d+: the Dask workers running it died more often than the scheduler allows .* done$",
        ):
            asyncio.run(run_dask(prepare(sweep, delay=0.6), cluster.scheduler_address, on_result))
        assert len(killed) == 1
