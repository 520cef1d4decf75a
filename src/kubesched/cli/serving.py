"""What the server commands share: the listen address, the event loop, graceful stop on signals."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Coroutine, Iterable, Iterator
from typing import Any

import uvicorn

from kubesched.cli.errors import CLIError

log = logging.getLogger("kubesched")


def parse_listen(value: str, flag: str = "--listen") -> tuple[str, int]:
    """HOST:PORT (an empty host means all interfaces; [::1]:80 for IPv6)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise CLIError(f"{flag}: expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def run(main: Coroutine[Any, Any, None]) -> None:
    """Run the command's coroutine on uvloop when it is installed."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


async def stop_tasks(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel background tasks (cluster sources) and wait until they have ended."""
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def wait_for_stop_signal() -> None:
    """Return on the first SIGINT or SIGTERM."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    log.info("shutting down")


class GracefulServer(uvicorn.Server):
    """uvicorn that stops on SIGINT/SIGTERM after the requests in flight and exits 0 (uvicorn itself
    re-raises the signal, which ends the process with a signal status)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    def _stop(self) -> None:
        log.info("shutting down")
        self.should_exit = True
