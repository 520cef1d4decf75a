"""Small X.509 toolkit: CAs, serving certs and client certs as PEM bytes (EC P-256).

Used by the test control plane (apiserver serving cert, client identities), the
admission-webhook tests (webhook serving certs) and the ``kubesched certs`` command.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_VALIDITY = dt.timedelta(days=1)
# Absorbs clock skew between the machine that signs and the process that verifies.
BACKDATE = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class CertKey:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    def certificate(self) -> x509.Certificate:
        """The parsed certificate."""
        return x509.load_pem_x509_certificate(self.cert_pem)

    def write(self, cert_path: Path, key_path: Path) -> tuple[Path, Path]:
        """Write both files (the key readable by the owner only); return their paths."""
        return write_pair(self, cert_path, key_path)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _load_ca(ca: CertKey) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise TypeError("CA key must be an EC key")
    return ca.certificate(), key


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    # X.509 caps a common name at 64 characters; clients verify the SANs, which keep full names.
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64]))
    return x509.Name(attrs)


def _validity(valid_for: dt.timedelta) -> tuple[dt.datetime, dt.datetime]:
    now = dt.datetime.now(dt.UTC)
    return now - BACKDATE, now + valid_for


def new_ca(common_name: str, *, valid_for: dt.timedelta = DEFAULT_VALIDITY) -> CertKey:
    """A self-signed CA that may sign leaf certificates (no intermediates)."""
    key = _new_key()
    not_before, not_after = _validity(valid_for)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue(
    ca: CertKey,
    common_name: str,
    *,
    organizations: Sequence[str] = (),
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = (),
    server: bool = False,
    client: bool = False,
    valid_for: dt.timedelta = DEFAULT_VALIDITY,
) -> CertKey:
    """A leaf certificate signed by ``ca``; ``server``/``client`` pick the extended key usages."""
    if not (server or client):
        raise ValueError("a leaf certificate needs server and/or client usage")
    ca_cert, ca_key = _load_ca(ca)
    key = _new_key()
    not_before, not_after = _validity(valid_for)
    # A leaf must not outlive its CA, or verifiers reject the chain before the leaf expires.
    not_after = min(not_after, ca_cert.not_valid_after_utc)
    usages = []
    if server:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
    if client:
        usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organizations))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return CertKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def serving_cert(
    ca: CertKey,
    common_name: str,
    *,
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = (),
    valid_for: dt.timedelta = DEFAULT_VALIDITY,
) -> CertKey:
    """A TLS server certificate (EKU serverAuth) for the given DNS names and IPs."""
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS or IP SAN")
    return issue(ca, common_name, dns_names=dns_names, ip_addresses=ip_addresses, server=True, valid_for=valid_for)


def client_cert(
    ca: CertKey,
    common_name: str,
    organizations: Sequence[str] = (),
    *,
    valid_for: dt.timedelta = DEFAULT_VALIDITY,
) -> CertKey:
    """A TLS client certificate (EKU clientAuth); Kubernetes reads CN as the user, O as groups."""
    return issue(ca, common_name, organizations=organizations, client=True, valid_for=valid_for)


def key_pair() -> tuple[bytes, bytes]:
    """A bare EC P-256 key pair (private PKCS#8 PEM, public SubjectPublicKeyInfo PEM), e.g. for service accounts."""
    key = _new_key()
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return _key_pem(key), public


def write_private(path: Path, data: bytes) -> Path:
    """Write secret bytes with mode 0600, whether the file is new (created so: no window where others can read
    them) or was there (0644 from another tool: emptied, then made private before anything is written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(fd, 0o600)  # the mode given to os.open applies only to a file it creates
        out.write(data)
    return path


def write_pair(pair: CertKey, cert_path: Path, key_path: Path) -> tuple[Path, Path]:
    """Write a certificate (0644) and its key (0600); return (cert_path, key_path)."""
    cert_path.parent.mkdir(parents=True, exist_ok=True)
    cert_path.write_bytes(pair.cert_pem)
    write_private(key_path, pair.key_pem)
    return cert_path, key_path
