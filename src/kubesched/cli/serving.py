"""What the server commands share: the listen address, the event loop, graceful stop on signals."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from collections.abc import Coroutine, Iterable
from typing import Any

from kubesched.cluster.kubeclient import CredentialError, KubeClient
from kubesched.errors import CLIError
from kubesched.http.server import Limits

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


def add_limit_flags(parser: argparse.ArgumentParser, max_body: int) -> None:
    """What one client may cost the server: body and header size, read and idle timeouts, connections.
    ``max_body``: the command's default body limit (`http.handler.Body` checks it)."""
    d = Limits()
    group = parser.add_argument_group("connection limits")
    group.add_argument(
        "--max-body-bytes",
        type=int,
        default=max_body,
        help=f"a request's body; larger get 413 (default {max_body})",
    )
    group.add_argument(
        "--max-header-bytes",
        type=int,
        default=d.max_header_bytes,
        help=f"request line + headers; larger get 431 (default {d.max_header_bytes})",
    )
    group.add_argument(
        "--header-timeout",
        type=float,
        default=d.header_timeout,
        help=f"seconds to receive a request's headers, or the first request (default {d.header_timeout:g})",
    )
    group.add_argument(
        "--body-timeout",
        type=float,
        default=d.body_timeout,
        help=f"seconds to receive a request's body after its headers (default {d.body_timeout:g})",
    )
    group.add_argument(
        "--idle-timeout",
        type=float,
        default=d.idle_timeout,
        help=f"seconds a kept-alive connection may wait for its next request (default {d.idle_timeout:g})",
    )
    group.add_argument(
        "--max-connections",
        type=int,
        default=d.max_connections,
        help=f"open connections; past it a new one gets 503 and is closed (default {d.max_connections})",
    )


def limits_from(args: argparse.Namespace) -> Limits:
    for flag in (
        "max_body_bytes",
        "max_header_bytes",
        "header_timeout",
        "body_timeout",
        "idle_timeout",
        "max_connections",
    ):
        if getattr(args, flag) <= 0:
            raise CLIError(f"--{flag.replace('_', '-')}: must be positive")
    return Limits(
        args.max_header_bytes, args.header_timeout, args.body_timeout, args.idle_timeout, args.max_connections
    )


async def authenticate(client: KubeClient, log: logging.Logger) -> None:
    """Stop with a clear error when the cluster's credentials cannot be obtained or are refused (at startup)."""
    try:
        user = await client.authenticate()
    except CredentialError as err:
        raise CLIError(str(err)) from None
    if user is None:
        log.warning("API server %s not reachable yet: authentication not checked", client.conn.server)
    else:
        log.info("authenticated to %s as %s", client.conn.server, user)
