"""Checks of the webhook's (and the binding extender's) certificates before they are deployed.

A certificate the API server rejects makes every call to the webhook fail, and with failurePolicy Fail that
blocks pods: so the renderer refuses a CA that did not sign the certificate, a certificate that does not name the
Service, a key that does not match, or an expired certificate.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from kubesched.deploy.plan import ExtenderTLS


class ServingPEMs(Protocol):
    @property
    def ca_pem(self) -> bytes: ...
    @property
    def cert_pem(self) -> bytes: ...
    @property
    def key_pem(self) -> bytes: ...


def client_problems(tls: ExtenderTLS, now: dt.datetime | None = None) -> list[str]:
    """Why kube-scheduler's client certificate would be refused by the extender (signed by ca.crt, not expired, its
    key); empty when it would not."""
    found = problems(_Client(tls.ca_pem, tls.client_cert_pem, tls.client_key_pem), "", now, check_name=False)
    return [p.replace("tls.crt", "client.crt").replace("tls.key", "client.key") for p in found]


class _Client:
    def __init__(self, ca: bytes, cert: bytes, key: bytes) -> None:
        self.ca_pem, self.cert_pem, self.key_pem = ca, cert, key


def problems(tls: ServingPEMs, dns_name: str, now: dt.datetime | None = None, *, check_name: bool = True) -> list[str]:
    """Why `tls` cannot serve the webhook at `dns_name` (the Service's `NAME.NS.svc`); empty when it can."""
    try:
        ca = x509.load_pem_x509_certificate(tls.ca_pem)
    except ValueError as err:
        return [f"ca.crt is not a PEM certificate: {err}"]
    try:
        cert = x509.load_pem_x509_certificate(tls.cert_pem)
    except ValueError as err:
        return [f"tls.crt is not a PEM certificate: {err}"]
    out: list[str] = []
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        out.append(f"tls.crt was not signed by ca.crt ({ca.subject.rfc4514_string()}): the caBundle would not trust it")
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = sans.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    if check_name and dns_name not in names:
        out.append(f"tls.crt does not name {dns_name} (its DNS names: {', '.join(names) or 'none'})")
    when = now or dt.datetime.now(dt.UTC)
    if cert.not_valid_after_utc <= when:
        out.append(f"tls.crt expired on {cert.not_valid_after_utc:%Y-%m-%d}")
    try:
        key = serialization.load_pem_private_key(tls.key_pem, password=None)
    except (ValueError, TypeError) as err:
        return [*out, f"tls.key is not an unencrypted PEM private key: {err}"]
    pem = serialization.Encoding.PEM
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(pem, spki) != cert.public_key().public_bytes(pem, spki):
        out.append("tls.key is not the key of tls.crt")
    return out
