"""ServingTLS over real sockets: a renewed certificate, key or client CA is served from the next handshake, a pair
that does not load is refused (counted, the previous one kept), open connections keep going, and the expiry metric
is the served certificate's notAfter."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import socket
import ssl
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry, generate_latest

from kubesched import pki
from kubesched.extender.app import Dispatcher
from kubesched.http.server import HTTPServer
from kubesched.http.tls import CIPHERS, ServingTLS
from kubesched.testing.waiting import until
from tests.unit.extender.conftest import make_service

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


@dataclass
class Files:
    dir: Path
    ca: pki.CertKey

    @property
    def cert(self) -> Path:
        return self.dir / "tls.crt"

    @property
    def key(self) -> Path:
        return self.dir / "tls.key"

    def issue(self, **kw: dt.timedelta) -> pki.CertKey:
        return pki.serving_cert(self.ca, "srv", ip_addresses=["127.0.0.1"], **kw)

    def install(self, pair: pki.CertKey) -> None:
        """As kubelet updates a Secret volume: each file replaced at once (a rename), never half written."""
        for path, pem in ((self.cert, pair.cert_pem), (self.key, pair.key_pem)):
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(pem)
            os.replace(tmp, path)


@pytest.fixture
def files(tmp_path: Path) -> Files:
    f = Files(tmp_path, pki.new_ca("serving-ca"))
    (tmp_path / "ca.crt").write_bytes(f.ca.cert_pem)
    f.install(f.issue())
    return f


@pytest.fixture
async def served(files: Files) -> AsyncIterator[tuple[ServingTLS, int]]:
    tls = ServingTLS(files.cert, files.key, interval=0.05)
    srv = HTTPServer(Dispatcher(make_service(), max_body=4096), "127.0.0.1", 0, tls.context)
    await srv.start()
    yield tls, srv.bound_port
    await srv.shutdown(grace=1)


def client(ca: Path, cert: pki.CertKey | None = None, tmp: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None and tmp is not None:
        (tmp / "client.crt").write_bytes(cert.cert_pem)
        (tmp / "client.key").write_bytes(cert.key_pem)
        ctx.load_cert_chain(tmp / "client.crt", tmp / "client.key")
    return ctx


class Conn:
    """One TLS connection: the certificate the server presented, and requests on it (keep-alive)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        self.serial = x509.load_der_x509_certificate(der).serial_number

    async def healthz(self) -> int:
        self.writer.write(HEALTHZ)
        status = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            length = int(value) if name.lower() == "content-length" else length
        await self.reader.readexactly(length)
        return int(status.split()[1])

    def close(self) -> None:
        self.writer.close()


async def connect(port: int, ctx: ssl.SSLContext) -> Conn:
    return Conn(*await asyncio.open_connection("127.0.0.1", port, ssl=ctx))


def serial_of(pair: pki.CertKey) -> int:
    return pair.certificate().serial_number


async def test_a_renewed_pair_is_served_from_the_next_handshake(files: Files, served: tuple[ServingTLS, int]) -> None:
    tls, port = served
    first = await connect(port, client(files.dir / "ca.crt"))
    assert first.serial == tls.serial and await first.healthz() == 200
    renewed = files.issue()
    files.install(renewed)
    assert tls.check() is True
    assert tls.serial == serial_of(renewed) and tls.reloads == {"applied": 1, "refused": 0}
    second = await connect(port, client(files.dir / "ca.crt"))
    assert second.serial == serial_of(renewed) and await second.healthz() == 200
    # The connection opened before keeps its session and goes on serving requests.
    for _ in range(3):
        assert await first.healthz() == 200
    first.close()
    second.close()


async def test_silent_and_reset_clients_across_a_reload(files: Files, served: tuple[ServingTLS, int]) -> None:
    """A client connected before the reload that sends its ClientHello after it gets the new certificate; one that
    resets in the middle of its ClientHello disturbs nobody."""
    tls, port = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)  # connected, silent
    _, resetting = await asyncio.open_connection("127.0.0.1", port)
    resetting.write(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's first bytes
    await resetting.drain()
    resetting.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    resetting.close()  # RST
    renewed = files.issue()
    files.install(renewed)
    assert tls.check() is True
    await writer.start_tls(client(files.dir / "ca.crt"), server_hostname="127.0.0.1")
    silent = Conn(reader, writer)
    assert silent.serial == serial_of(renewed) and await silent.healthz() == 200
    silent.close()
    fresh = await connect(port, client(files.dir / "ca.crt"))
    assert fresh.serial == serial_of(renewed) and await fresh.healthz() == 200
    fresh.close()


async def test_watch_follows_the_files_without_being_called(files: Files, served: tuple[ServingTLS, int]) -> None:
    tls, port = served
    watcher = asyncio.create_task(tls.watch())
    try:
        renewed = files.issue()
        files.install(renewed)
        await until(lambda: tls.serial == serial_of(renewed), "the renewed certificate", within=5)
        conn = await connect(port, client(files.dir / "ca.crt"))
        assert conn.serial == serial_of(renewed)
        conn.close()
    finally:
        watcher.cancel()


async def test_a_half_written_or_mismatched_pair_keeps_the_previous_one(
    files: Files, served: tuple[ServingTLS, int], caplog: pytest.LogCaptureFixture
) -> None:
    """`kubesched certs --force` writes tls.crt, then tls.key: seen in between, the new certificate has the old
    key. Refused and counted once (not at every poll), the previous pair still served; then the key arrives."""
    tls, port = served
    old = tls.serial
    renewed = files.issue()
    files.cert.write_bytes(renewed.cert_pem)  # in place, as --force does; the key not yet
    with caplog.at_level(logging.WARNING, "kubesched.http.tls"):
        assert tls.check() is False
        assert tls.check() is False  # the same refused files: not counted again
    assert tls.reloads == {"applied": 0, "refused": 1} and tls.serial == old
    assert f"still serving certificate serial {old:x}" in caplog.text
    conn = await connect(port, client(files.dir / "ca.crt"))
    assert conn.serial == old and await conn.healthz() == 200
    files.key.write_bytes(renewed.key_pem)
    assert tls.check() is True and tls.serial == serial_of(renewed)
    # Cut short (a copy interrupted), emptied, or gone: each refused, the renewed pair kept.
    for broken in (renewed.cert_pem[: len(renewed.cert_pem) // 2], b""):
        files.cert.write_bytes(broken)
        assert tls.check() is False and tls.serial == serial_of(renewed)
    files.cert.unlink()
    assert tls.check() is False
    assert tls.reloads == {"applied": 1, "refused": 4}
    after = await connect(port, client(files.dir / "ca.crt"))
    assert after.serial == serial_of(renewed)
    assert await conn.healthz() == 200
    conn.close()
    after.close()


async def test_a_rewrite_within_one_clock_tick_is_seen(files: Files, served: tuple[ServingTLS, int]) -> None:
    """Same size, same inode, same mtime (the kernel's file clock is coarse): the contents decide."""
    tls, _ = served
    before = files.cert.stat()
    # ECDSA signatures vary in length by a byte or two: one of a few hundred has the size of the one on disk.
    same_size = (
        pair
        for pair in (files.issue() for _ in range(500))
        if len(pair.cert_pem) == before.st_size and len(pair.key_pem) == files.key.stat().st_size
    )
    renewed = next(same_size)
    key_before = files.key.stat()
    files.cert.write_bytes(renewed.cert_pem)
    files.key.write_bytes(renewed.key_pem)
    os.utime(files.cert, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.utime(files.key, ns=(key_before.st_atime_ns, key_before.st_mtime_ns))
    assert tls.check() is True and tls.serial == serial_of(renewed)


async def test_touched_but_unchanged_files_are_not_a_reload(files: Files, served: tuple[ServingTLS, int]) -> None:
    tls, _ = served
    files.cert.touch()
    files.install(pki.CertKey(files.cert.read_bytes(), files.key.read_bytes()))  # new inodes, same bytes
    assert tls.check() is False and tls.reloads == {"applied": 0, "refused": 0}


async def test_a_new_client_ca_decides_the_next_handshakes(files: Files, tmp_path: Path) -> None:
    """The client CA is reloaded too: clients of the old CA are refused from then on, the new CA's admitted."""
    old_ca, new_ca = pki.new_ca("clients-old"), pki.new_ca("clients-new")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(old_ca.cert_pem)
    tls = ServingTLS(files.cert, files.key, ca_file, interval=0.05)
    srv = HTTPServer(Dispatcher(make_service(), max_body=4096), "127.0.0.1", 0, tls.context)
    await srv.start()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    old_client = client(files.dir / "ca.crt", pki.client_cert(old_ca, "kube-scheduler"), tmp_path / "a")
    new_client = client(files.dir / "ca.crt", pki.client_cert(new_ca, "kube-scheduler"), tmp_path / "b")
    try:
        kept = await connect(srv.bound_port, old_client)
        assert await kept.healthz() == 200
        assert not await answers(srv.bound_port, new_client)
        ca_file.write_bytes(new_ca.cert_pem)
        assert tls.check() is True
        assert await answers(srv.bound_port, new_client)
        assert not await answers(srv.bound_port, old_client)
        assert await kept.healthz() == 200  # verified when it connected: not dropped
        kept.close()
    finally:
        await srv.shutdown(grace=1)


async def answers(port: int, ctx: ssl.SSLContext) -> bool:
    """Whether a request on a new connection is answered (TLS 1.3 reports a refused client certificate after the
    handshake: at the first read)."""
    try:
        conn = await connect(port, ctx)
        status = await asyncio.wait_for(conn.healthz(), 5)
    except (ssl.SSLError, ConnectionError, asyncio.IncompleteReadError, IndexError):
        return False
    conn.close()
    return status == 200


async def test_the_expiry_metric_is_the_served_certificates_not_after(files: Files) -> None:
    short = files.issue(valid_for=dt.timedelta(hours=3))
    files.install(short)
    tls = ServingTLS(files.cert, files.key)
    registry = CollectorRegistry()
    registry.register(tls)

    def expiry() -> float | None:
        return registry.get_sample_value("kubesched_serving_certificate_expiration_timestamp_seconds")

    assert expiry() == short.certificate().not_valid_after_utc.timestamp()
    longer = files.issue(valid_for=dt.timedelta(days=90))
    files.install(longer)
    tls.check()
    assert expiry() == longer.certificate().not_valid_after_utc.timestamp()
    files.cert.write_bytes(b"not a certificate")
    tls.check()
    assert expiry() == longer.certificate().not_valid_after_utc.timestamp()  # still the served one
    text = generate_latest(registry).decode()
    assert 'kubesched_serving_certificate_reloads_total{result="applied"} 1.0' in text
    assert 'kubesched_serving_certificate_reloads_total{result="refused"} 1.0' in text


async def test_only_ecdhe_with_aead_on_tls_12_and_nothing_older(files: Files, served: tuple[ServingTLS, int]) -> None:
    _, port = served
    for suite in ("ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES128-SHA256", "AES128-GCM-SHA256"):
        ctx = client(files.dir / "ca.crt")
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(suite)
        with pytest.raises((ssl.SSLError, ConnectionError)):  # refused in the handshake
            await connect(port, ctx)
    ctx = client(files.dir / "ca.crt")
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    conn = await connect(port, ctx)
    name, version, _ = conn.writer.get_extra_info("cipher")
    assert version == "TLSv1.2" and name.startswith("ECDHE-") and ("GCM" in name or "CHACHA20" in name)
    conn.close()
    assert CIPHERS == "ECDHE+AESGCM:ECDHE+CHACHA20"
