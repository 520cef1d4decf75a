"""Serving TLS that follows its files: certificate, key and client CA are reloaded when they change on disk.

Like kube-apiserver's dynamic serving certificates and controller-runtime's certwatcher: a renewed pair (cert-manager
updating the mounted Secret, `kubesched certs --force`, a copy) is served by the next handshake, connections already
open keep theirs, and a pair that does not load (half written: a certificate with the previous key) is refused,
logged and counted, and the previous one is kept until the files change again.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

log = logging.getLogger("kubesched.http.tls")

# ECDHE key exchange with AEAD ciphers for TLS 1.2 (TLS 1.3's suites are all AEAD): Go's defaults, which
# kube-apiserver and kube-scheduler serve with, without the CBC suites Go still keeps for old clients.
CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"
# How often the files are read and compared (three small files; their mtime would miss a rewrite of the same size
# within one tick of the kernel's coarse clock). kubelet updates a mounted Secret within about a minute.
POLL_SECONDS = 2.0


def server_context(
    cert: str | Path, key: str | Path, client_ca: str | Path | None = None, *, optional: bool = False
) -> ssl.SSLContext:
    """TLS ≥ 1.2 with `CIPHERS`; with ``client_ca``, clients must present a certificate it signed (and only it:
    the system's trust roots are not loaded). ``optional``: a client may also present none (Go's
    VerifyClientCertIfGiven), and the server decides per request (`HTTPServer`'s ``open_paths``); a certificate it
    does present must still verify."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(CIPHERS)
    ctx.load_cert_chain(cert, key)  # checks that the key is the certificate's
    if client_ca:
        ctx.load_verify_locations(client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL if optional else ssl.CERT_REQUIRED
    return ctx


@dataclass(frozen=True)
class _Loaded:
    context: ssl.SSLContext
    contents: tuple[bytes, ...]
    serial: int
    not_after: float  # seconds since the epoch


class ServingTLS:
    """A server's TLS: hand `context` to the server, run `watch()` beside it."""

    def __init__(
        self,
        cert: Path,
        key: Path,
        client_ca: Path | None = None,
        *,
        interval: float = POLL_SECONDS,
        optional_client_cert: bool = False,
    ):
        self.paths = tuple(p for p in (cert, key, client_ca) if p is not None)
        self.client_ca = client_ca
        self.optional_client_cert = optional_client_cert
        self.interval = interval
        self.reloads = {"applied": 0, "refused": 0}
        self._refused: tuple[bytes, ...] | str | None = None  # what was refused last: not retried until it changes
        self._current = self._load(self._read())  # the first load raises: the server does not start without TLS
        # The context the listener holds: each handshake is moved to the current one (the SNI callback runs for
        # every ClientHello, with or without a server name), so the listener never has to be replaced.
        self.context = self._current.context
        self.context.sni_callback = self._select

    @property
    def serial(self) -> int:
        """The serial number of the certificate new handshakes get."""
        return self._current.serial

    @property
    def not_after(self) -> float:
        return self._current.not_after

    def _select(self, conn: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, ctx: ssl.SSLContext) -> None:
        current = self._current.context
        if current is not ctx:
            conn.context = current

    def _read(self) -> tuple[bytes, ...]:
        return tuple(p.read_bytes() for p in self.paths)  # follows symlinks: a Secret volume swaps its ..data link

    def _load(self, contents: tuple[bytes, ...]) -> _Loaded:
        # The files are read again by OpenSSL: if they changed in between, the next check sees it and loads again.
        ctx = server_context(self.paths[0], self.paths[1], self.client_ca, optional=self.optional_client_cert)
        cert = x509.load_pem_x509_certificate(contents[0])  # the leaf: the first block
        return _Loaded(ctx, contents, cert.serial_number, cert.not_valid_after_utc.timestamp())

    def check(self) -> bool:
        """Reload when a file changed; whether new handshakes now get a new certificate, key or client CA."""
        try:
            contents: tuple[bytes, ...] | str = self._read()
        except OSError as err:  # e.g. renamed away for a moment
            contents = f"{err.filename}: {err.strerror}"
        if contents == self._current.contents:
            self._refused = None  # back to what is served: a later breakage is news again
            return False  # unchanged (touched at most)
        if contents == self._refused:
            return False  # refused already: logged and counted once
        try:
            if isinstance(contents, str):
                raise OSError(contents)
            loaded = self._load(contents)
        except (OSError, ssl.SSLError, ValueError) as err:
            self._refused = contents
            self.reloads["refused"] += 1
            reason = getattr(err, "reason", None) or (
                "not PEM, or cut short" if isinstance(err, ssl.SSLError) else getattr(err, "strerror", None) or err
            )
            log.warning(
                "TLS files %s changed but do not load (%s): still serving certificate serial %x",
                ", ".join(map(str, self.paths)),
                reason,
                self._current.serial,
            )
            return False
        self._refused = None
        loaded.context.sni_callback = self._select  # unused (a swapped-in context's callback is not called)
        self._current = loaded
        self.reloads["applied"] += 1
        log.info("TLS reloaded from %s: serving certificate serial %x", self.paths[0], loaded.serial)
        return True

    async def watch(self) -> None:
        """Check the files every `interval` seconds, until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            self.check()

    def collect(self) -> Iterator[Metric]:
        """The serving certificate's expiry and the reloads (a prometheus_client collector)."""
        yield GaugeMetricFamily(
            "kubesched_serving_certificate_expiration_timestamp_seconds",
            "When the certificate new TLS handshakes get expires (notAfter), in seconds since the epoch.",
            value=self._current.not_after,
        )
        reloads = CounterMetricFamily(
            "kubesched_serving_certificate_reloads",
            "Changes of the TLS files: applied (served from the next handshake) or refused (they did not load;"
            " the previous certificate is still served).",
            labels=["result"],
        )
        for result, n in self.reloads.items():
            reloads.add_metric([result], n)
        yield reloads
