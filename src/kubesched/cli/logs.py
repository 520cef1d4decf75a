"""Logs operators can search, as kube-scheduler writes them: klog's structured text or JSON.

Fields (pod, node, plugin, profile, err, …) travel on the record: call sites pass them as
``log.info("bound", extra={"pod": key, "node": name})``, so modules below the CLI need no import from here.

Verbosity follows kube-scheduler's ``-v``: 0 (default) shows info and up, 2 adds details (Python level 15),
4 adds debug, 5 adds httpx/httpcore per-request lines. ``--log-level`` maps onto it (see `verbosity`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

# Python level of kube-scheduler's V(2) lines ("info details"); INFO is V(0), DEBUG is V(4).
DETAIL = 15
logging.addLevelName(DETAIL, "DETAIL")

# Loggers of HTTP libraries whose per-request lines are noise below -v 5.
REQUEST_LOGGERS = ("httpx", "httpcore", "hpack", "kubesched.cluster.http1")

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a call site attached with ``extra=``."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def verbosity_of(record: logging.LogRecord) -> int:
    """The klog verbosity a record stands for: 0 for info and above, 2 for details, 4 for debug."""
    if record.levelno >= logging.INFO:
        return 0
    return 2 if record.levelno >= DETAIL else 4


def _klog_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value if isinstance(value, str) else str(value), ensure_ascii=False)


_SEVERITY = {logging.CRITICAL: "F", logging.ERROR: "E", logging.WARNING: "W"}


class KlogFormatter(logging.Formatter):
    """klog's text: ``I1201 15:04:05.123456   12345 file.py:42] "message" pod="ns/name" node="n1"``."""

    def format(self, record: logging.LogRecord) -> str:
        severity = next((c for level, c in _SEVERITY.items() if record.levelno >= level), "I")
        t = time.gmtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        head = f"{severity}{time.strftime('%m%d %H:%M:%S', t)}.{micros:06d} {os.getpid():>7} "
        head += f"{record.filename}:{record.lineno}] {json.dumps(record.getMessage(), ensure_ascii=False)}"
        extra = fields(record)
        if record.exc_info and record.exc_info[1] is not None and "err" not in extra:
            extra["err"] = str(record.exc_info[1]) or type(record.exc_info[1]).__name__
        line = head + "".join(f" {k}={_klog_value(v)}" for k, v in extra.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JSONFormatter(logging.Formatter):
    """One JSON object per line: ts, level, v, logger, caller, msg, then the fields as keys."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "v": verbosity_of(record),
            "logger": record.name,
            "caller": f"{record.filename}:{record.lineno}",
            "msg": record.getMessage(),
        }
        for key, value in fields(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class OneTracebackPerBug(logging.Filter):
    """Lets through the first record of each bug (an exception of one type and message, raised at one place), with its
    traceback, and counts the later ones instead: `scheduler run --cluster` reports a plugin's bug once, however many
    pods it fails (each pod's line says it). `summary` says what was dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.bugs: dict[tuple[str, str, str, int], tuple[str, int]] = {}  # key -> (first message, later records)

    def filter(self, record: logging.LogRecord) -> bool:
        err = record.exc_info[1] if record.exc_info else None
        if err is None or record.levelno < logging.ERROR:
            return True
        tb = err.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else ("", 0)
        key = (f"{type(err).__module__}.{type(err).__qualname__}", str(err), *where)
        seen = self.bugs.get(key)
        if seen is None:
            self.bugs[key] = (record.getMessage(), 0)
            return True
        self.bugs[key] = (seen[0], seen[1] + 1)
        return False

    def summary(self) -> list[str]:
        """One line per bug: its first message and how many more times it happened."""
        return [
            f"{message}{f' and {more} more time(s)' if more else ''}; traceback above"
            for message, more in self.bugs.values()
        ]


# --log-level (kept for scripts) in kube-scheduler's -v terms; warning/error also raise the floor.
LEVELS = {
    "debug": (4, logging.DEBUG),
    "info": (0, logging.INFO),
    "warning": (0, logging.WARNING),
    "error": (0, logging.ERROR),
}


def verbosity(v: int | None, level: str | None) -> tuple[int, int]:
    """(-v, Python level of the root logger) from ``-v`` (wins when given) and ``--log-level``."""
    if v is not None:
        return v, logging.DEBUG if v >= 4 else DETAIL if v >= 2 else logging.INFO
    return LEVELS[level or "info"]


def setup(level: str | None = "info", fmt: str = "json", v: int | None = None) -> None:
    n, root_level = verbosity(v, level)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else KlogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(root_level)
    for name in REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if n >= 5 else logging.WARNING)


def add_flags(parser: Any) -> None:
    """kube-scheduler's ``-v``/``--v`` and ``--log-format`` (text is klog's), plus ``--log-level``."""
    parser.add_argument(
        "-v", "--v", dest="v", type=int, default=None, metavar="N",
        help="log verbosity as kube-scheduler's: 0 info (default), 2 details, 4 debug, 5 HTTP client requests",
    )  # fmt: skip
    parser.add_argument(
        "--log-level", default=None, choices=tuple(LEVELS),
        help="older spelling: debug = -v 4, info = -v 0; warning/error show only those (-v wins when given)",
    )  # fmt: skip
    parser.add_argument(
        "--log-format", default="json", choices=("json", "text"),
        help="json (one object per line) or text (klog's structured text, as kube-scheduler's default)",
    )  # fmt: skip
