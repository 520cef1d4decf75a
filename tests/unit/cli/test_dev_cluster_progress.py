"""dev-cluster progress without a terminal: a line per phase, a "still" line per interval, never a flood."""

from __future__ import annotations

import io

from kubesched.cli.dev_cluster_progress import Progress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_per_phase_and_interval() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress("dc:", stream=out, every=30.0, clock=clock)
    assert not progress.live  # a StringIO is no terminal: no spinner, no escape codes
    progress("waiting for another build", "lock held by pid 7 (x), for 5s")
    for _ in range(60):  # the lock wait reports twice a second: no line for each
        clock.now += 0.5
        progress("waiting for another build", "lock held by pid 7 (x), for 30s")
        progress.tick()
    clock.now += 5
    progress("building etcd (1/2)", "go get")
    clock.now += 61
    progress.tick()
    lines = out.getvalue().splitlines()
    assert lines == [
        "dc: waiting for another build: lock held by pid 7 (x), for 5s (0s)",
        "dc: still waiting for another build: lock held by pid 7 (x), for 30s (30s)",
        "dc: building etcd (1/2): go get (0s)",
        "dc: still building etcd (1/2): go get (1m01s)",
    ]
    assert "\x1b" not in out.getvalue()


def test_context_manager_without_terminal_stops_its_ticker() -> None:
    out = io.StringIO()
    with Progress("dc:", stream=out) as progress:
        progress("phase", "")
    assert out.getvalue() == "dc: phase (0s)\n"
    assert progress._ticker is not None and not progress._ticker.is_alive()


def test_duration() -> None:
    assert [duration(s) for s in (0, 59.9, 60, 185)] == ["0s", "59s", "1m00s", "3m05s"]
