"""A fault-injecting TCP proxy for tests: put it between a client and a real server, then break the link.

    client ──> FaultProxy(127.0.0.1:port) ──> upstream (kube-apiserver, an extender, a webhook)

Bytes pass through untouched (TLS included), so the proxy cannot see requests; it breaks connections:

* ``reset()``: every open connection gets a TCP RST now; the link stays usable afterwards.
* ``refuse()``: as ``reset()``, and new connections are reset at once until ``heal()``.
* ``blackhole()``: the link goes silent without a reset. Open connections never carry a byte again
  (half-open, as after a NAT or firewall forgot them); new ones are accepted and silent until ``heal()``.
* ``delay(seconds)``: every chunk is held ``seconds`` before it is passed on, in order.
* ``cut_answers()``: requests reach the server, answers never reach the client: the first bytes of an
  answer reset the client's connection (the server did the work; the client cannot know).
* ``heal()``: new connections pass again (connections made silent stay silent).

It runs its own event loop in a thread, so a test may block (subprocesses, sleeps) while it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from dataclasses import dataclass
from typing import Self

_CHUNK = 65536


@dataclass
class Counts:
    """What the proxy has seen since it started."""

    accepted: int = 0
    open: int = 0
    reset: int = 0
    to_server: int = 0
    to_client: int = 0


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.silent = False
        self.tasks: list[asyncio.Task[None]] = []

    def reset(self) -> None:
        for writer in (self.client, self.upstream):
            if writer is not None:
                _rst(writer)
        for task in self.tasks:
            task.cancel()


def _rst(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), not a FIN: the peer sees 'connection reset'."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(Exception):
        writer.transport.abort()


class FaultProxy:
    """A TCP proxy to ``upstream_host:upstream_port`` whose faults a test switches on and off."""

    def __init__(self, upstream_host: str, upstream_port: int, listen_host: str = "127.0.0.1", port: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.listen_host = listen_host
        self.port = port
        self.counts = Counts()
        self._mode = "pass"
        self._delay = 0.0
        self._links: set[_Link] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None

    # ---- life --------------------------------------------------------------------------------------------

    def start(self) -> Self:
        """Listen (``port`` 0: any free port; read it from ``port`` after) and serve in a thread."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._accept, self.listen_host, self.port, reuse_address=True)
                )
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as err:  # reported to the caller of start()
                failure.append(err)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=main, name=f"faultproxy-{self.upstream[1]}", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        """Reset every connection and stop listening."""
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> str:
        """host:port to dial instead of the upstream."""
        return f"{self.listen_host}:{self.port}"

    # ---- faults (callable from any thread) ---------------------------------------------------------------

    def heal(self) -> None:
        self._set("pass")

    def reset(self) -> None:
        self._call(self._reset_all)

    def refuse(self) -> None:
        self._set("refuse")
        self._call(self._reset_all)

    def blackhole(self) -> None:
        self._set("blackhole")
        self._call(self._silence_all)

    def delay(self, seconds: float) -> None:
        self._delay = seconds
        self._set("delay")

    def cut_answers(self) -> None:
        self._set("cut")

    @property
    def mode(self) -> str:
        return self._mode

    def _set(self, mode: str) -> None:
        self._mode = mode

    def _call(self, fn: object) -> None:
        loop = self._loop
        if loop is None:
            return
        done = threading.Event()

        def run() -> None:
            try:
                fn()  # type: ignore[operator]
            finally:
                done.set()

        loop.call_soon_threadsafe(run)
        done.wait(10)

    def _reset_all(self) -> None:
        for link in list(self._links):
            link.reset()
            self.counts.reset += 1
        self._links.clear()

    def _silence_all(self) -> None:
        for link in self._links:
            link.silent = True

    # ---- serving -----------------------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.counts.accepted += 1
        link = _Link(writer)
        if self._mode == "refuse":
            _rst(writer)
            self.counts.reset += 1
            return
        if self._mode == "blackhole":
            link.silent = True
        self._links.add(link)
        self.counts.open += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            _rst(writer)  # upstream down: the client sees a reset, as through a real proxy
            self._links.discard(link)
            self.counts.open -= 1
            return
        link.upstream = up_writer
        loop = asyncio.get_running_loop()
        link.tasks = [
            loop.create_task(self._pipe(link, reader, up_writer, to_server=True)),
            loop.create_task(self._pipe(link, up_reader, writer, to_server=False)),
        ]
        try:
            await asyncio.gather(*link.tasks, return_exceptions=True)
        finally:
            self._links.discard(link)
            self.counts.open -= 1
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    async def _pipe(
        self, link: _Link, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, to_server: bool
    ) -> None:
        try:
            while True:
                data = await src.read(_CHUNK)
                if not data:
                    if not link.silent:
                        with contextlib.suppress(Exception):
                            dst.write_eof()
                    if link.silent:
                        await asyncio.Event().wait()  # silent: not even the close passes
                    return
                if link.silent:
                    continue  # swallowed: the other side waits forever
                if self._mode == "cut" and not to_server:
                    link.reset()  # the server answered; the client never hears it
                    self.counts.reset += 1
                    return
                if self._mode == "delay" and self._delay > 0:
                    await asyncio.sleep(self._delay)
                    if link.silent:
                        continue
                if to_server:
                    self.counts.to_server += len(data)
                else:
                    self.counts.to_client += len(data)
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            link.reset()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        self._reset_all()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
