"""`kubesched certs` and the command-line checks of `kubesched webhook serve` (which end before serving)."""

from __future__ import annotations

import ipaddress
import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "webhook-config.yaml"


@pytest.fixture(autouse=True)
def _keep_logging() -> Iterator[None]:
    """`webhook serve` sets up the process's logging; put pytest's back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def certs(out: Path, *extra: str) -> int:
    return main(["certs", "--out", str(out), "--service", "hook", "--namespace", "kubesched", *extra])


def test_certs_writes_a_ca_and_a_serving_certificate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pki"
    assert certs(out, "--ip", "127.0.0.1", "--ip", "::1", "--dns", "hook.example.com", "--days", "30") == 0
    assert capsys.readouterr().out.split() == [str(out / n) for n in ("ca.crt", "tls.crt", "tls.key")]
    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    leaf = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    assert leaf.subject.rfc4514_string() == "CN=hook.kubesched.svc"
    assert leaf.issuer == ca.subject
    leaf.verify_directly_issued_by(ca)
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "hook",
        "hook.kubesched",
        "hook.kubesched.svc",
        "hook.kubesched.svc.cluster.local",
        "hook.example.com",
    ]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert 29 <= (leaf.not_valid_after_utc - leaf.not_valid_before_utc).days <= 31
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    assert not (out / "ca.key").exists()


def test_certs_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert certs(tmp_path) == 0
    before = (tmp_path / "tls.crt").read_bytes()
    assert certs(tmp_path) == 2
    assert "ca.crt, tls.crt, tls.key exist already (--force overwrites them)" in capsys.readouterr().err
    assert (tmp_path / "tls.crt").read_bytes() == before
    assert certs(tmp_path, "--force") == 0
    assert (tmp_path / "tls.crt").read_bytes() != before


def test_certs_force_over_a_readable_key_makes_it_private(tmp_path: Path) -> None:
    """A tls.key left 0644 (copied, untarred, made by another tool) is 0600 once --force has written over it."""
    assert certs(tmp_path) == 0
    key = tmp_path / "tls.key"
    key.chmod(0o644)
    before = key.read_bytes()
    assert certs(tmp_path, "--force") == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_bytes() != before
    assert stat.S_IMODE((tmp_path / "tls.crt").stat().st_mode) & 0o044  # the certificate stays readable


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--service", "Hook_1", "--namespace", "ns"], "--service: 'Hook_1' is not a DNS label"),
        (["--service", "hook", "--namespace", "a.b"], "--namespace: 'a.b' is not a DNS label"),
        (["--service", "hook", "--namespace", "ns", "--ip", "localhost"], "--ip: 'localhost' is not an IP address"),
        (["--service", "hook", "--namespace", "ns", "--days", "0"], "--days: must be positive"),
    ],
)
def test_certs_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    assert main(["certs", "--out", str(tmp_path), *args]) == 2
    assert says in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    assert certs(tmp_path / "pki", "--ip", "127.0.0.1") == 0
    return tmp_path / "pki"


def serve(*args: str) -> int:
    return main(["webhook", "serve", "--log-format", "text", *args])


def test_serve_refuses_plain_http(capsys: pytest.CaptureFixture[str], pki: Path) -> None:
    assert serve("--config", str(EXAMPLE)) == 2
    assert "serves HTTPS only: give --tls-cert and --tls-key" in capsys.readouterr().err
    assert serve("--config", str(EXAMPLE), "--tls-cert", str(pki / "tls.crt")) == 2


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--tls-cert", "missing.crt", "--tls-key", "{pki}/tls.key"], "--tls-cert: no such file missing.crt"),
        (["--tls-cert", "{pki}/tls.crt", "--tls-key", "{pki}/ca.crt"], "not a usable certificate and key"),
        (["--listen", "8443"], "--listen: expected HOST:PORT"),
        (["--max-body-bytes", "0"], "--max-body-bytes: must be positive"),
        (["--nodes", "n.yaml", "--kubeconfig", "k"], "--nodes excludes --kubeconfig and --in-cluster"),
        (["--nodes", "{pki}/none.yaml"], "cannot read"),
        (["--kubeconfig", "{pki}/none.kubeconfig"], "feasibility rules need nodes"),
        (["--managed-resource", "gpu/a/b"], "--managed-resource 'gpu/a/b': not a resource name: a qualified name"),
        (["--managed-resource", "x.io/g pu"], "--managed-resource 'x.io/g pu': not a resource name: name part must"),
    ],
)
def test_serve_bad_command_lines(capsys: pytest.CaptureFixture[str], pki: Path, extra: list[str], says: str) -> None:
    tls = ["--tls-cert", str(pki / "tls.crt"), "--tls-key", str(pki / "tls.key")]
    args = [a.format(pki=pki) for a in ["--config", str(EXAMPLE), *tls, *extra]]
    assert serve(*args) == 2
    assert says in capsys.readouterr().err


def test_serve_lists_every_config_problem(capsys: pytest.CaptureFixture[str], pki: Path, tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("rules:\n- feasibility: {}\n- requireLabel: {label: x}\n")
    tls = ["--tls-cert", str(pki / "tls.crt"), "--tls-key", str(pki / "tls.key")]
    assert serve("--config", str(bad), *tls) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kubesched: error: {bad}: invalid webhook config:\n")
    assert "  - rules[0].feasibility.action: required\n" in err
    assert "  - rules[1].requireLabel.schedulerName: required\n" in err


def test_managed_resources_without_a_cluster_say_why(
    capsys: pytest.CaptureFixture[str], pki: Path, tmp_path: Path
) -> None:
    config = tmp_path / "rules.yaml"
    config.write_text("rules:\n- requireLabel: {schedulerName: kubesched, label: custom}\n")  # no feasibility rule
    tls = ["--tls-cert", str(pki / "tls.crt"), "--tls-key", str(pki / "tls.key")]
    missing = str(pki / "none.kubeconfig")
    assert serve("--config", str(config), *tls, "--managed-resource", "x/y", "--kubeconfig", missing) == 2
    assert "--managed-resource needs the cluster" in capsys.readouterr().err
