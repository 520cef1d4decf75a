"""`kubesched manifests extender`: --watch-pods (rendered as given, auto by default, a warning when a policy reads
pods it would not see) and, with --bind, HTTPS with kube-scheduler's client certificate."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from kubesched.cli.main import main

from .test_cli import find, manifests

Obj = dict[str, Any]
SPREAD = """
from kubesched import plugin
policy = plugin.Policy(name="spread", profile=plugin.ProfileSpec(plugins=(plugin.PluginRef("InterPodAffinity"),)))
"""
BLIND = """
from kubesched import plugin
policy = plugin.Policy(name="blind", profile=plugin.ProfileSpec(plugins=(plugin.PluginRef("NodeAffinity"),)))
"""


def _args(objects: list[Obj], name: str = "kubesched-extender") -> list[str]:
    args: list[str] = find(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def _rules(objects: list[Obj]) -> list[Obj]:
    rules: list[Obj] = find(objects, "ClusterRole", "kubesched-extender.kubesched")["rules"]
    return rules


def test_auto_is_the_default_and_yes_no_are_rendered_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(capsys, "extender")
    assert _args(objects)[_args(objects).index("--watch-pods") + 1] == "auto"
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]} in _rules(objects)
    for value in ("yes", "no"):
        objects = manifests(capsys, "extender", "--watch-pods", value)
        assert _args(objects)[_args(objects).index("--watch-pods") + 1] == value
        assert any(r["resources"] == ["pods"] for r in _rules(objects)) == (value == "yes")


def test_no_with_a_policy_that_reads_pods_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "spread.py").write_text(SPREAD)
    (tmp_path / "blind.py").write_text(BLIND)
    spread = ["--policy", str(tmp_path / "spread.py"), "--load-plugins"]
    assert main(["manifests", "extender", *spread, "--watch-pods", "no"]) == 0
    err = capsys.readouterr().err
    assert "kubesched: warning: --watch-pods no: policy spread: plugin(s) InterPodAffinity may read the pods" in err
    assert "(watch them: --watch-pods auto)" in err
    assert main(["manifests", "extender", *spread]) == 0
    assert "warning" not in capsys.readouterr().err
    blind = ["--policy", str(tmp_path / "blind.py"), "--load-plugins"]
    assert main(["manifests", "extender", *blind]) == 0
    assert "note: policy blind reads no pods (every plugin declares reads_pods = False)" in capsys.readouterr().err
    assert main(["manifests", "extender", *blind, "--watch-pods", "no"]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err and "reads no pods" not in err


def test_watch_pods_belongs_to_the_extender(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "scheduler", "--watch-pods", "no"]) == 2
    assert "--watch-pods: does not apply to mode scheduler" in capsys.readouterr().err


def test_bind_needs_certificates_and_says_how_to_make_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "extender", "--bind"]) == 2
    err = capsys.readouterr().err
    assert (
        "--extender-certs-dir DIR (made by: kubesched certs --service kubesched-extender --namespace kubesched" in err
    )
    assert "--client kube-scheduler --out DIR) or --generate-certs" in err
    assert main(["manifests", "extender", "--extender-certs-dir", "x"]) == 2
    assert "--extender-certs-dir: does not apply to mode extender" in capsys.readouterr().err


def _secret(objects: list[Obj], name: str) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in find(objects, "Secret", name)["data"].items()}


def test_certs_from_kubesched_certs_serve_the_extender_and_authenticate_kube_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "certs"
    command = ["certs", "--out", str(out), "--service", "kubesched-extender", "--namespace", "kubesched"]
    assert main([*command, "--client", "kube-scheduler"]) == 0
    printed = capsys.readouterr().out.split()
    assert [Path(p).name for p in printed] == ["ca.crt", "tls.crt", "tls.key", "client.crt", "client.key"]
    assert stat.S_IMODE((out / "client.key").stat().st_mode) == 0o600
    client = x509.load_pem_x509_certificate((out / "client.crt").read_bytes())
    eku = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    objects = manifests(capsys, "extender", "--bind", "--extender-certs-dir", str(out))
    serving = _secret(objects, "kubesched-extender-tls")
    assert serving == {n: (out / n).read_bytes() for n in ("ca.crt", "tls.crt", "tls.key")}
    scheduler = _secret(objects, "kubesched-extender-scheduler-client-tls")
    assert scheduler == {"ca.crt": (out / "ca.crt").read_bytes(), "tls.crt": client.public_bytes(Encoding.PEM)} | {
        "tls.key": (out / "client.key").read_bytes()
    }
    args = _args(objects)
    assert args[args.index("--client-ca") + 1] == "/etc/kubesched/tls/ca.crt"
    assert args[args.index("--scheduler-name") + 1] == "kubesched-extender-scheduler"
    config = yaml.safe_load(find(objects, "ConfigMap", "kubesched-extender-scheduler")["data"]["config.yaml"])
    (ext,) = config["extenders"]
    assert ext["urlPrefix"] == "https://kubesched-extender.kubesched.svc:8888" and ext["enableHTTPS"] is True
    assert ext["tlsConfig"] == {
        "certFile": "/etc/kubernetes/extender-tls/tls.crt",
        "keyFile": "/etc/kubernetes/extender-tls/tls.key",
        "caFile": "/etc/kubernetes/extender-tls/ca.crt",
    }
    pod = find(objects, "Deployment", "kubesched-extender-scheduler")["spec"]["template"]["spec"]
    secrets = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {"kubesched-extender-scheduler-client-tls"}
    probe = find(objects, "Deployment", "kubesched-extender")["spec"]["template"]["spec"]["containers"][0]
    assert probe["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"


def test_certificates_for_another_service_or_ca_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = tmp_path / "wrong"
    base = ["certs", "--service", "kubesched-webhook", "--namespace", "kubesched", "--client", "kube-scheduler"]
    assert main([*base, "--out", str(wrong)]) == 0
    other = tmp_path / "other"
    assert main([*base, "--out", str(other)]) == 0
    (wrong / "client.crt").write_bytes((other / "client.crt").read_bytes())  # signed by another CA
    capsys.readouterr()
    assert main(["manifests", "extender", "--bind", "--extender-certs-dir", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert "--extender-certs-dir: tls.crt does not name kubesched-extender.kubesched.svc" in err
    assert "--extender-certs-dir: client.crt was not signed by ca.crt" in err
    assert "--extender-certs-dir: client.key is not the key of client.crt" in err


def test_the_kustomize_base_makes_both_secrets_from_extender_certs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", "extender", "--bind", "--kustomize", "-o", str(tmp_path / "base")]) == 0
    kustomization = yaml.safe_load((tmp_path / "base" / "kustomization.yaml").read_text())
    generated = {g["name"]: g["files"] for g in kustomization["secretGenerator"]}
    assert generated == {
        "kubesched-extender-tls": ["ca.crt=extender-certs/ca.crt", "tls.crt=extender-certs/tls.crt",
                                   "tls.key=extender-certs/tls.key"],
        "kubesched-extender-scheduler-client-tls": ["ca.crt=extender-certs/ca.crt",
                                                    "tls.crt=extender-certs/client.crt",
                                                    "tls.key=extender-certs/client.key"],
    }  # fmt: skip
    ignore = (tmp_path / "base" / "extender-certs" / ".gitignore").read_text()
    assert "kubesched certs --out extender-certs --service kubesched-extender" in ignore
    assert "kubesched-extender-tls" not in "".join(p.read_text() for p in (tmp_path / "base").glob("*-secret-*"))


def test_helm_values_carry_watch_pods_and_the_extender_certificates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "certs"
    argv = ["certs", "--out", str(out), "--service", "kubesched-extender", "--namespace", "kubesched"]
    assert main([*argv, "--client", "kube-scheduler"]) == 0
    capsys.readouterr()
    flags = ["--watch-pods", "yes", "--bind", "--extender-certs-dir", str(out), "--helm-values"]
    assert main(["manifests", "extender", *flags]) == 0
    captured = capsys.readouterr()
    values = yaml.safe_load(captured.out)["extender"]
    assert values["watchPods"] == "yes" and values["bind"] is True
    certs = values["certificates"]
    assert certs["mode"] == "provided" and certs["clientKey"] == (out / "client.key").read_text()
    assert "the values hold the extender's and kube-scheduler's private keys" in captured.err
    assert main(["manifests", "extender", "--bind", "--generate-certs", "--helm-values"]) == 0
    generated = yaml.safe_load(capsys.readouterr().out)["extender"]["certificates"]
    assert generated == {"mode": "generate", "days": 365}
