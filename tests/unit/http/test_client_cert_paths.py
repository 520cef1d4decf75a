"""`--client-ca` on the extender: a client without a certificate reaches only the open paths (probes, metrics); the
verbs answer 401; a certificate from another CA fails the handshake; kube-scheduler's certificate reaches the verbs."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubesched import pki
from kubesched.cli.extender_cmd import OPEN_PATHS
from kubesched.extender.app import Dispatcher
from kubesched.http.server import HTTPServer
from kubesched.http.tls import ServingTLS
from tests.unit.extender.conftest import make_service, pod


@pytest.fixture
def ca(tmp_path: Path) -> pki.CertKey:
    ca = pki.new_ca("extender-ca")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    pki.serving_cert(ca, "srv", ip_addresses=["127.0.0.1"]).write(tmp_path / "tls.crt", tmp_path / "tls.key")
    return ca


@pytest.fixture
async def port(tmp_path: Path, ca: pki.CertKey) -> AsyncIterator[int]:
    tls = ServingTLS(tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt", optional_client_cert=True)
    srv = HTTPServer(Dispatcher(make_service(), max_body=1 << 20), "127.0.0.1", 0, tls.context, open_paths=OPEN_PATHS)
    await srv.start()
    yield srv.bound_port
    await srv.shutdown(grace=1)


def _client(tmp: Path, cert: pki.CertKey | None, name: str = "client") -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(tmp / "ca.crt"))
    if cert is not None:
        cert.write(tmp / f"{name}.crt", tmp / f"{name}.key")
        ctx.load_cert_chain(tmp / f"{name}.crt", tmp / f"{name}.key")
    return ctx


async def _request(port: int, ctx: ssl.SSLContext, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="127.0.0.1")
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode() + body)
        data = await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


FILTER = json.dumps({"Pod": pod(1), "NodeNames": ["n-small"]}).encode()


async def test_without_a_certificate_only_probes_and_metrics_answer(tmp_path: Path, port: int) -> None:
    anonymous = _client(tmp_path, None)
    for path in ("/healthz", "/livez", "/readyz", "/metrics"):
        status, _ = await _request(port, anonymous, "GET", path)
        assert status in (200, 503), path  # readyz: 503 until the cache syncs; never 401
    for verb in ("filter", "prioritize", "bind", "preempt"):
        status, body = await _request(port, anonymous, "POST", f"/{verb}", FILTER)
        assert status == 401, verb
        assert body == f"/{verb} needs a client certificate signed by the server's client CA (--client-ca)".encode()


async def test_kube_schedulers_certificate_reaches_the_verbs(tmp_path: Path, ca: pki.CertKey, port: int) -> None:
    scheduler = _client(tmp_path, pki.client_cert(ca, "kube-scheduler"))
    status, body = await _request(port, scheduler, "POST", "/filter", FILTER)
    assert status == 200 and json.loads(body)["NodeNames"] == ["n-small"]


async def test_a_certificate_of_another_ca_fails_the_handshake(tmp_path: Path, port: int) -> None:
    stranger = _client(tmp_path, pki.client_cert(pki.new_ca("other-ca"), "kube-scheduler"), name="stranger")
    with pytest.raises((ssl.SSLError, ConnectionResetError, asyncio.IncompleteReadError, IndexError)):
        await _request(port, stranger, "POST", "/filter", FILTER)


async def test_a_serving_certificate_of_the_same_ca_is_no_client_certificate(
    tmp_path: Path, ca: pki.CertKey, port: int
) -> None:
    # EKU serverAuth only: OpenSSL checks the purpose of a client's certificate.
    impostor = _client(tmp_path, pki.serving_cert(ca, "srv2", dns_names=["x"]), name="impostor")
    with pytest.raises((ssl.SSLError, ConnectionResetError, asyncio.IncompleteReadError, IndexError)):
        await _request(port, impostor, "POST", "/filter", FILTER)
