"""Logs as kube-scheduler writes them: klog's structured text and JSON, fields as keys, -v verbosity."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator

import pytest

from kubesched.cli import logs
from kubesched.cli.main import build_parser


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name in logs.REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)


def record(level: int = logging.INFO, msg: str = "bound %s", **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("kubesched.scheduler", level, "/x/scheduler.py", 42, msg, ("it",), None)
    rec.__dict__.update(extra)
    return rec


KLOG = re.compile(r'^([IWEF])(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) +(\d+) (\S+):(\d+)\] ("(?:[^"\\]|\\.)*")(.*)$')


def test_text_is_klogs_structured_format() -> None:
    line = logs.KlogFormatter().format(record(pod="shop/web-0", node="n1", plugin="NodeResourcesFit", attempts=3))
    m = KLOG.match(line)
    assert m, line
    assert m.group(1) == "I" and int(m.group(4)) == os.getpid() and m.group(5, 6) == ("scheduler.py", "42")
    assert json.loads(m.group(7)) == "bound it"
    assert m.group(8) == ' pod="shop/web-0" node="n1" plugin="NodeResourcesFit" attempts=3'
    assert logs.KlogFormatter().format(record(logging.WARNING))[0] == "W"
    assert logs.KlogFormatter().format(record(logging.ERROR))[0] == "E"


def test_text_quotes_hostile_values_onto_one_line() -> None:
    line = logs.KlogFormatter().format(record(msg='a "quoted"\nmessage %s', pod='x" injected="y\nz'))
    assert "\n" not in line
    assert line.endswith(r'] "a \"quoted\"\nmessage it" pod="x\" injected=\"y\nz"')


def test_an_exception_becomes_err() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        rec = logging.LogRecord("x", logging.ERROR, "/x/a.py", 1, "failed", (), __import__("sys").exc_info())
    line = logs.KlogFormatter().format(rec)
    assert line.splitlines()[0].endswith('] "failed" err="boom"')
    entry = json.loads(logs.JSONFormatter().format(rec))
    assert "ValueError: boom" in entry["exc"]


def test_json_has_the_fields_as_keys() -> None:
    entry = json.loads(logs.JSONFormatter().format(record(pod="shop/web-0", node="n1", profile="default-scheduler")))
    assert entry["msg"] == "bound it" and entry["v"] == 0 and entry["level"] == "info"
    assert entry["caller"] == "scheduler.py:42"
    assert (entry["pod"], entry["node"], entry["profile"]) == ("shop/web-0", "n1", "default-scheduler")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["ts"])
    assert json.loads(logs.JSONFormatter().format(record(logging.DEBUG)))["v"] == 4
    assert json.loads(logs.JSONFormatter().format(record(logs.DETAIL)))["v"] == 2


@pytest.mark.parametrize(
    ("argv", "shown", "hidden"),
    [
        ([], [logging.INFO], [logs.DETAIL, logging.DEBUG]),
        (["-v", "2"], [logs.DETAIL], [logging.DEBUG]),
        (["--v=4"], [logging.DEBUG], []),
        (["--log-level", "debug"], [logging.DEBUG], []),
        (["--log-level", "warning"], [logging.WARNING], [logging.INFO]),
        (["--log-level", "warning", "-v", "2"], [logs.DETAIL], [logging.DEBUG]),  # -v wins
    ],
)
def test_verbosity_as_kube_schedulers_v(argv: list[str], shown: list[int], hidden: list[int]) -> None:
    args = build_parser().parse_args(["extender", "serve", "--policy", "custom-label", *argv])
    logs.setup(args.log_level, args.log_format, args.v)
    log = logging.getLogger("kubesched.test")
    assert all(log.isEnabledFor(level) for level in shown)
    assert not any(log.isEnabledFor(level) for level in hidden)


def test_http_client_request_lines_only_from_v5() -> None:
    for v, on in ((0, False), (4, False), (5, True)):
        logs.setup(None, "text", v)
        assert logging.getLogger("httpx").isEnabledFor(logging.INFO) is on
        assert logging.getLogger("httpcore").isEnabledFor(logging.DEBUG) is on


def test_the_scheduler_logs_bindings_at_v2_with_pod_node_and_profile(caplog: pytest.LogCaptureFixture) -> None:
    from pathlib import Path

    from kubesched.cli.main import main

    cluster = Path(__file__).resolve().parents[3] / "examples" / "cluster.yaml"
    caplog.set_level(logs.DETAIL, logger="kubesched.scheduler")
    assert main(["scheduler", "run", "--cluster", str(cluster), "-o", "json", "--fail-on-pending"]) == 1
    bound = [r for r in caplog.records if r.getMessage() == "Successfully bound pod to node"]
    assert {(r.__dict__["pod"], r.__dict__["node"]) for r in bound} >= {
        ("shop/db-0", "node-a"),
        ("ml/trainer-0", "node-c"),
    }
    assert {r.__dict__["profile"] for r in bound} == {"default-scheduler"}
    assert all(logs.verbosity_of(r) == 2 for r in bound)


def test_the_scheduler_logs_unable_to_schedule_pod_at_v2_with_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    # kube-scheduler's handleSchedulingFailure: "Unable to schedule pod; no fit; waiting" pod="ns/name" err="0/N …".
    from pathlib import Path

    from kubesched.cli.main import main

    cluster = Path(__file__).resolve().parents[3] / "examples" / "cluster.yaml"
    caplog.set_level(logs.DETAIL, logger="kubesched.scheduler")
    assert main(["scheduler", "run", "--cluster", str(cluster), "-o", "json"]) == 0
    waiting = [r for r in caplog.records if r.getMessage() == "Unable to schedule pod; no fit; waiting"]
    huge = [r for r in waiting if r.__dict__["pod"] == "ml/huge-0"]
    assert huge and all(logs.verbosity_of(r) == 2 for r in waiting)
    line = logs.KlogFormatter().format(huge[0])
    assert line.startswith("I") and line.split("] ", 1)[1].startswith(
        '"Unable to schedule pod; no fit; waiting" pod="ml/huge-0" err="0/4 nodes are available: '
    ), line
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no error: rejections are not errors
