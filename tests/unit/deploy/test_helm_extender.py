"""The chart's binding extender: cert-manager mode is the kustomize base plus its Certificates; the chart's
generated certificates authenticate kube-scheduler to the extender (one CA; the client certificate's EKU)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser
from kubesched.deploy import render
from tests.unit.deploy.helm_support import helm_binary, normal, template

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


def test_cert_manager_mode_is_the_kustomize_base_plus_two_certificates(helm: Path, tmp_path: Path) -> None:
    values: Obj = {"extender": {"enabled": True, "bind": True, "certificates": {"mode": "cert-manager"}}}
    chart = normal(template(helm, values, tmp_path), namespace="kubesched")
    args = build_parser().parse_args(["manifests", "extender", "--bind", "--kustomize", "-o", str(tmp_path / "k")])
    base = normal(render.render(manifests_cmd.build_plan(args)), namespace="kubesched")
    issued = {k: chart.pop(k) for k in list(chart) if k[0] in ("Certificate", "Issuer")}
    assert sorted(issued) == [
        ("Certificate", "kubesched-extender"),
        ("Certificate", "kubesched-extender-ca"),
        ("Certificate", "kubesched-extender-scheduler-client"),
        ("Issuer", "kubesched-extender-ca"),
        ("Issuer", "kubesched-extender-selfsigned"),
    ]
    serving = issued[("Certificate", "kubesched-extender")]["spec"]
    assert serving["secretName"] == "kubesched-extender-tls" and serving["usages"] == [
        "digital signature",
        "server auth",
    ]
    assert "kubesched-extender.kubesched.svc" in serving["dnsNames"]
    client = issued[("Certificate", "kubesched-extender-scheduler-client")]["spec"]
    assert client["secretName"] == "kubesched-extender-scheduler-client-tls"
    assert client["usages"] == ["digital signature", "client auth"] and client["commonName"] == "kube-scheduler"
    assert serving["issuerRef"] == client["issuerRef"] == {"name": "kubesched-extender-ca", "kind": "Issuer"}
    assert sorted(chart) == sorted(base)
    for key, obj in base.items():
        assert chart[key] == obj, f"{key} differs"
    values["extender"]["certificates"]["issuerRef"] = {"name": "corp-ca", "kind": "ClusterIssuer"}
    objects = template(helm, values, tmp_path)
    assert not [o for o in objects if o["kind"] == "Issuer"]
    issuers = [o["spec"]["issuerRef"] for o in objects if o["kind"] == "Certificate"]
    assert issuers == [{"name": "corp-ca", "kind": "ClusterIssuer"}] * 2


def test_generated_certificates_one_ca_a_client_certificate_for_kube_scheduler(helm: Path, tmp_path: Path) -> None:
    objects = template(helm, {"extender": {"enabled": True, "bind": True}}, tmp_path)
    secrets = {o["metadata"]["name"]: o["data"] for o in objects if o["kind"] == "Secret"}
    serving, client = secrets["kubesched-extender-tls"], secrets["kubesched-extender-scheduler-client-tls"]
    assert serving["ca.crt"] == client["ca.crt"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(client["tls.crt"]))
    assert cert.subject.rfc4514_string() == "CN=kube-scheduler"
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH in list(eku)
    ca = x509.load_pem_x509_certificate(base64.b64decode(client["ca.crt"]))
    cert.verify_directly_issued_by(ca)


def test_bind_off_renders_no_certificate_and_plain_http(helm: Path, tmp_path: Path) -> None:
    values = {"extender": {"enabled": True, "certificates": {"mode": "cert-manager"}}}
    objects = template(helm, values, tmp_path)
    assert not [o for o in objects if o["kind"] in ("Secret", "Certificate", "Issuer")]
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("scheduler")]
    assert "urlPrefix: http://kubesched-extender" in config["data"]["config.yaml"]
