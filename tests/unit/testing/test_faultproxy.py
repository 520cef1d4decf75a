"""The fault proxy against a local echo server: each fault does what the tests relying on it assume."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from kubesched.testing.faultproxy import FaultProxy
from kubesched.testing.waiting import wait_until


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            while data := self.request.recv(65536):
                self.server.received.append(data)  # type: ignore[attr-defined]
                self.request.sendall(data)
        except OSError:
            pass  # the proxy reset us: that is the point of most tests here


@pytest.fixture
def echo() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(echo: socketserver.ThreadingTCPServer) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", echo.server_address[1]) as p:
        yield p


def dial(proxy: FaultProxy, timeout: float = 2.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout)


def exchange(proxy: FaultProxy, data: bytes) -> bytes:
    """Send ``data`` on a new connection and read the answer; a reset (at any step) raises."""
    with dial(proxy) as s:
        s.sendall(data)
        answer = s.recv(100)
        if not answer:
            raise AssertionError("closed with a FIN, expected a reset or an answer")
        return answer


def test_passes_bytes_both_ways(proxy: FaultProxy) -> None:
    with dial(proxy) as s:
        s.sendall(b"hello")
        assert s.recv(100) == b"hello"
    assert proxy.counts.to_server == 5 and proxy.counts.to_client == 5


def test_reset_breaks_open_connections_and_new_ones_pass(proxy: FaultProxy) -> None:
    s = dial(proxy)
    s.sendall(b"a")
    assert s.recv(10) == b"a"
    proxy.reset()
    with pytest.raises(ConnectionResetError):
        s.sendall(b"b")
        s.recv(10)  # either call sees the reset
        s.sendall(b"c")
    s.close()
    with dial(proxy) as again:
        again.sendall(b"d")
        assert again.recv(10) == b"d"


def test_refuse_resets_new_connections_until_healed(proxy: FaultProxy) -> None:
    proxy.refuse()
    with pytest.raises((ConnectionResetError, BrokenPipeError)):
        exchange(proxy, b"x")
    proxy.heal()
    assert exchange(proxy, b"y") == b"y"


def test_blackhole_is_silent_without_a_reset_and_heal_serves_new_connections(
    proxy: FaultProxy, echo: socketserver.ThreadingTCPServer
) -> None:
    old = dial(proxy, timeout=0.5)
    proxy.blackhole()
    old.sendall(b"lost")
    with pytest.raises(TimeoutError):
        old.recv(10)  # no answer, no reset: the client can only time out
    fresh = dial(proxy, timeout=0.5)
    fresh.sendall(b"also lost")
    with pytest.raises(TimeoutError):
        fresh.recv(10)
    assert b"lost" not in b"".join(echo.received)  # type: ignore[attr-defined]
    proxy.heal()
    with pytest.raises(TimeoutError):
        old.recv(10)  # a connection made silent stays silent
    with dial(proxy) as s:
        s.sendall(b"back")
        assert s.recv(10) == b"back"
    old.close()
    fresh.close()


def test_delay_holds_each_chunk(proxy: FaultProxy) -> None:
    proxy.delay(0.3)
    with dial(proxy) as s:
        start = time.monotonic()
        s.sendall(b"slow")
        assert s.recv(10) == b"slow"
        assert time.monotonic() - start >= 0.55  # held on the way there and on the way back


def test_cut_answers_lets_the_request_through_and_resets_the_client(
    proxy: FaultProxy, echo: socketserver.ThreadingTCPServer
) -> None:
    proxy.cut_answers()
    with dial(proxy) as s:
        s.sendall(b"POST /binding")
        with pytest.raises(ConnectionResetError):
            if not s.recv(10):
                raise AssertionError("closed with a FIN, expected a reset")
    wait_until(
        lambda: b"POST /binding" in b"".join(echo.received),  # type: ignore[attr-defined]
        "the request at the server",
        within=2,
        interval=0.01,
    )


def test_upstream_down_resets_the_client() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with FaultProxy("127.0.0.1", port) as proxy, pytest.raises((ConnectionResetError, BrokenPipeError)):
        exchange(proxy, b"x")
