"""kubesched.pki: chains verify, SANs and EKUs are right, and a real mutual-TLS handshake works."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import PolicyBuilder, Store

from kubesched import pki


@pytest.fixture(scope="module")
def ca() -> pki.CertKey:
    return pki.new_ca("test-ca")


def test_ca_is_a_ca_and_backdated(ca: pki.CertKey) -> None:
    cert = ca.certificate()
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    now = dt.datetime.now(dt.UTC)
    assert now - dt.timedelta(minutes=6) < cert.not_valid_before_utc < now - dt.timedelta(minutes=4)
    assert dt.timedelta(hours=23) < cert.not_valid_after_utc - now <= dt.timedelta(days=1)
    cert.verify_directly_issued_by(cert)


def test_serving_cert_verifies_with_sans_and_server_eku(ca: pki.CertKey) -> None:
    leaf = pki.serving_cert(
        ca, "apiserver", dns_names=["localhost", "kubernetes.default.svc"], ip_addresses=["127.0.0.1", "::1"]
    )
    cert = leaf.certificate()
    cert.verify_directly_issued_by(ca.certificate())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", "kubernetes.default.svc"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    # The same path validation a TLS client does (RFC 5280 + CA/B web profile).
    verifier = (
        PolicyBuilder()
        .store(Store([ca.certificate()]))
        .build_server_verifier(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    )
    chain = verifier.verify(cert, [])
    assert chain[-1] == ca.certificate()


def test_client_cert_carries_user_and_groups(ca: pki.CertKey) -> None:
    cert = pki.client_cert(ca, "system:kube-scheduler", ["system:masters", "team-a"]).certificate()
    cert.verify_directly_issued_by(ca.certificate())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:kube-scheduler"
    orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert orgs == ["system:masters", "team-a"]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    # (cryptography's client verifier demands a SAN, which Kubernetes client certs do not need; the
    # loopback mutual-TLS test below checks client-cert path validation with OpenSSL instead.)


def test_cert_from_another_ca_does_not_verify(ca: pki.CertKey) -> None:
    other = pki.new_ca("other-ca")
    leaf = pki.client_cert(other, "mallory").certificate()
    with pytest.raises((ValueError, TypeError)):
        leaf.verify_directly_issued_by(ca.certificate())


def test_leaf_never_outlives_its_ca() -> None:
    short = pki.new_ca("short", valid_for=dt.timedelta(hours=1))
    leaf = pki.client_cert(short, "u", valid_for=dt.timedelta(days=30)).certificate()
    assert leaf.not_valid_after_utc <= short.certificate().not_valid_after_utc


def test_bad_requests_are_refused(ca: pki.CertKey) -> None:
    with pytest.raises(ValueError, match="SAN"):
        pki.serving_cert(ca, "nothing")
    with pytest.raises(ValueError, match="usage"):
        pki.issue(ca, "neither")


def test_key_pair_is_p256() -> None:
    private_pem, public_pem = pki.key_pair()
    private = serialization.load_pem_private_key(private_pem, password=None)
    public = serialization.load_pem_public_key(public_pem)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    assert isinstance(public, ec.EllipticCurvePublicKey)
    assert private.public_key().public_numbers() == public.public_numbers()
    assert private.curve.name == "secp256r1"


def test_write_pair_keeps_key_private(tmp_path: Path, ca: pki.CertKey) -> None:
    cert_path, key_path = ca.write(tmp_path / "sub" / "ca.crt", tmp_path / "sub" / "ca.key")
    assert cert_path.read_bytes() == ca.cert_pem
    assert key_path.read_bytes() == ca.key_pem
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600


def test_write_private_makes_an_existing_file_private(tmp_path: Path, ca: pki.CertKey) -> None:
    """os.open's mode applies only to a file it creates: a key written over a 0644 file must not stay 0644."""
    key_path = tmp_path / "tls.key"
    key_path.write_bytes(b"old, longer than the new contents " * 100)
    key_path.chmod(0o644)
    pki.write_private(key_path, ca.key_pem)
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert key_path.read_bytes() == ca.key_pem
    pki.write_pair(ca, tmp_path / "tls.crt", key_path)  # and again through write_pair
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600


def test_mutual_tls_handshake_on_loopback(tmp_path: Path) -> None:
    """A real handshake: server cert checked by IP SAN, client cert checked against the client CA."""
    server_ca, client_ca = pki.new_ca("server-ca"), pki.new_ca("client-ca")
    server = pki.serving_cert(server_ca, "srv", ip_addresses=["127.0.0.1"])
    client = pki.client_cert(client_ca, "alice", ["devs"])
    server.write(tmp_path / "srv.crt", tmp_path / "srv.key")
    client.write(tmp_path / "cli.crt", tmp_path / "cli.key")

    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "srv.crt", tmp_path / "srv.key")
    server_ctx.load_verify_locations(cadata=client_ca.cert_pem.decode())
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = ssl.create_default_context(cadata=server_ca.cert_pem.decode())
    client_ctx.load_cert_chain(tmp_path / "cli.crt", tmp_path / "cli.key")

    seen: dict[str, object] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                seen["peer"] = tls.getpeercert()
                tls.sendall(b"ok")

        thread = threading.Thread(target=serve)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            assert tls.recv(2) == b"ok"
        thread.join(timeout=5)
    peer = seen["peer"]
    assert isinstance(peer, dict)
    assert (("commonName", "alice"),) in peer["subject"]


def test_long_names_keep_full_sans_with_a_capped_common_name() -> None:
    long_name = "a-webhook-service-with-a-long-name." + "some-very-long-namespace-name-for-testing" + ".svc"
    ca = pki.new_ca(long_name + " webhook CA")
    cert = pki.serving_cert(ca, long_name, dns_names=[long_name]).certificate()
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [long_name]
    assert len(cert.subject.rfc4514_string()) <= 64 + len("CN=")
