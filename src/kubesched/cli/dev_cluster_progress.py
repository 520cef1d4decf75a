"""Progress of long dev-cluster steps (a cold build, another process's build lock): phase, detail, elapsed time.

At a terminal a rich spinner (as cli/tables.py) shows it live; otherwise plain lines go out, one per phase and
one every ``every`` seconds while a phase lasts, so logs of CI jobs show the build is alive without flooding.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

from kubesched.cli import tables


def duration(seconds: float) -> str:
    """``3m05s`` or ``42s``."""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    """A ``build.Progress`` callback; use it as a context manager around the long step."""

    def __init__(
        self,
        prefix: str,
        *,
        stream: TextIO | None = None,
        every: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.prefix = prefix
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.clock = clock
        self.live = tables.is_tty(self.stream)
        self.phase = ""
        self.detail = ""
        self._phase_start = self._last_line = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._status: Any = None
        self._ticker: threading.Thread | None = None

    def _text(self, now: float) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.phase}{detail} ({duration(now - self._phase_start)})"

    def _show(self, now: float, *, still: bool = False) -> None:
        if self._status is not None:
            self._status.update(self._text(now))
            return
        prefix = "still " if still else ""
        print(f"{self.prefix} {prefix}{self._text(now)}", file=self.stream, flush=True)
        self._last_line = now

    def __call__(self, phase: str, detail: str) -> None:
        with self._lock:
            now = self.clock()
            if phase != self.phase:
                self.phase, self.detail, self._phase_start = phase, detail, now
                self._show(now)
            else:
                self.detail = detail
                if self._status is not None:
                    self._show(now)

    def tick(self) -> None:
        """Refresh the spinner's elapsed time; in plain mode, a "still ..." line once per ``every`` seconds."""
        with self._lock:
            now = self.clock()
            if not self.phase:
                return
            if self._status is not None:
                self._show(now)
            elif now - self._last_line >= self.every:
                self._show(now, still=True)

    def _run_ticker(self) -> None:
        while not self._stop.wait(1.0):
            self.tick()

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console

            self._status = Console(file=self.stream).status("")
            self._status.start()
        self._ticker = threading.Thread(target=self._run_ticker, name="dev-cluster-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._status is not None:
            self._status.stop()
            self._status = None
            if self.phase and exc_type is None:  # leave the last phase on screen
                print(f"{self.prefix} {self._text(self.clock())}", file=self.stream, flush=True)
