"""The Helm chart (deploy/helm/kubesched) and `kubesched manifests` render the same objects for the same settings.

Each case gives the settings twice: as chart values and as `kubesched manifests` flags. Both renderings are put in
a normal form (helm_support.normal) and must be equal object for object, kind/name/spec.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from kubesched import pki
from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser, main
from kubesched.deploy import render
from kubesched.http.tls import ServingTLS
from tests.unit.deploy.helm_cases import (
    CASES,
    PLUGIN,
    SCHED_CONFIG,
    WEBHOOK_CONFIG,
    certs,
    cli,
    provided,
)
from tests.unit.deploy.helm_support import (
    CHART,
    PROMETHEUS_OPERATOR,
    ROOT,
    helm_binary,
    normal,
    run_helm,
    template,
)

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


@pytest.mark.parametrize(("namespace", "values", "flags"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_chart_renders_what_kubesched_manifests_renders(
    helm: Path,
    tmp_path: Path,
    namespace: str,
    values: Callable[[Path], Obj],
    flags: Callable[[Path], list[str]],
) -> None:
    chart = normal(template(helm, values(tmp_path), tmp_path, namespace), namespace=namespace)
    manifests = normal(cli([*flags(tmp_path), "--namespace", namespace]), namespace=namespace)
    assert sorted(chart) == sorted(manifests)
    for key, obj in manifests.items():
        assert chart[key] == obj, f"{key} differs"


def test_cert_manager_mode_is_the_kustomize_base_plus_a_certificate(helm: Path, tmp_path: Path) -> None:
    """Without a certificate of its own (the kustomize base), the CLI's objects equal the chart's with cert-manager:
    cert-manager makes the Secret and injects the caBundle."""
    values = {"scheduler": {"enabled": True}, "extender": {"enabled": True}, "webhook": {"enabled": True}}
    values["webhook"]["certificates"] = {"mode": "cert-manager"}
    chart = normal(template(helm, values, tmp_path), namespace="kubesched")
    args = build_parser().parse_args(["manifests", "all", "--kustomize", "-o", str(tmp_path / "k")])
    base = normal(render.render(manifests_cmd.build_plan(args)), namespace="kubesched")
    issued = {k: chart.pop(k) for k in list(chart) if k[0] in ("Certificate", "Issuer")}
    assert sorted(issued) == [
        ("Certificate", "kubesched-webhook"),
        ("Certificate", "kubesched-webhook-ca"),
        ("Issuer", "kubesched-webhook-ca"),
        ("Issuer", "kubesched-webhook-selfsigned"),
    ]
    serving = issued[("Certificate", "kubesched-webhook")]["spec"]
    assert serving["secretName"] == "kubesched-webhook-tls"
    assert "kubesched-webhook.kubesched.svc" in serving["dnsNames"]
    for key in [k for k in chart if k[0].endswith("WebhookConfiguration")]:
        annotations = chart[key]["metadata"].pop("annotations")
        assert annotations == {"cert-manager.io/inject-ca-from": "kubesched/kubesched-webhook"}
    assert sorted(chart) == sorted(base)
    for key, obj in base.items():
        assert chart[key] == obj, f"{key} differs"
    values["webhook"]["certificates"]["issuerRef"] = {"name": "corp-ca", "kind": "ClusterIssuer"}
    objects = template(helm, values, tmp_path)
    assert not [o for o in objects if o["kind"] == "Issuer"]
    (cert,) = [o for o in objects if o["kind"] == "Certificate"]
    assert cert["spec"]["issuerRef"] == {"name": "corp-ca", "kind": "ClusterIssuer"}


def test_changed_inputs_roll_the_pods(helm: Path, tmp_path: Path) -> None:
    def digest(values: Obj) -> str:
        objects = template(helm, values, tmp_path)
        (deployment,) = [
            o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "kubesched-webhook"
        ]
        return str(deployment["spec"]["template"]["metadata"]["annotations"]["kubesched.io/inputs-sha256"])

    pems = provided(certs(tmp_path, "kubesched"))
    first = digest({"webhook": {"enabled": True, "certificates": pems}})
    assert first == digest({"webhook": {"enabled": True, "certificates": pems}})
    assert first != digest({"webhook": {"enabled": True, "certificates": pems, "config": WEBHOOK_CONFIG}})


def test_the_chart_lints(helm: Path) -> None:
    assert "0 chart(s) failed" in run_helm(helm, "lint", str(CHART), "--strict").stdout
    everything = [
        "--set=scheduler.enabled=true,extender.enabled=true,webhook.enabled=true,metrics.service=true",
        "--set=metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true",
        "--set=metrics.grafanaDashboard.enabled=true",
    ]
    assert "0 chart(s) failed" in run_helm(helm, "lint", str(CHART), "--strict", *everything).stdout


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"scheduler": {"enabled": True, "config": SCHED_CONFIG}}, "scheduler.config.pluginModules[0]: plugins/gpu.py"),
        ({"extender": {"enabled": True, "policy": "mine.py"}}, "extender.policy: mine.py is a file"),
        ({"webhook": {"enabled": True, "certificates": {"mode": "vault"}}}, "at '/webhook/certificates/mode'"),
        ({"webhook": {"enabled": True, "config": {"rules": 3}}}, "at '/webhook/config/rules': got number"),
        ({"webhook": {"enabled": True, "config": {"rules": [{"feasibility": 3}]}}}, "at '/webhook/config/rules/0/feas"),
        ({"scheduler": {"enabled": True, "config": {"leaderElection": 3}}}, "at '/scheduler/config/leaderElection'"),
        ({"scheduler": {"enabled": True, "config": {"pluginModules": ["nocolon"]}}}, "'nocolon' does not match"),
        ({"webhook": {"enabled": True, "certificates": {"mode": "provided"}}}, "webhook.certificates.ca: required"),
        ({"webhook": {"enabled": True, "timeoutSeconds": 60}}, "webhook.timeoutSeconds: must be 1-30"),
        ({"webhook": {"enabled": True, "config": {"rules": [{"name": "x", "oops": {}}]}}}, "webhook.config.rules[0]"),
        ({"extender": {"enabled": True, "schedulerName": "Not_A_Name"}}, "extender.schedulerName"),
        (
            {"scheduler": {"enabled": True}, "extender": {"enabled": True, "schedulerName": "kubesched"}},
            'both use "kubesched"',
        ),
        ({"scheduler": {"enabled": True, "pluginFiles": {"a/b.py": "x"}}}, 'scheduler.pluginFiles: "a/b.py"'),
        (
            {"scheduler": {"enabled": True, "config": {"profiles": [{"plugins": {}}]}}},
            'profiles[0].schedulerName: "default-scheduler" is the cluster',
        ),
        ({"scheduler": {"enabled": "yes"}}, "at '/scheduler/enabled': got string, want boolean"),
        ({"webhook": {"enabled": True, "timeoutSeconds": "5s"}}, "at '/webhook/timeoutSeconds'"),
        ({"schduler": {"enabled": True}}, "additional properties 'schduler' not allowed"),
        ({"webhook": {"enabled": True, "managedResources": ["nvidia.com/GPU/x"]}}, "at '/webhook/managedResources/0'"),
    ],
)
def test_bad_values_fail_with_the_field(helm: Path, tmp_path: Path, values: Obj, message: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    proc = run_helm(helm, "template", "x", str(CHART), "-f", str(path), check=False)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr


def test_metrics_extras(helm: Path, tmp_path: Path) -> None:
    values = {
        "scheduler": {"enabled": True},
        "webhook": {"enabled": True},
        "metrics": {
            "service": True,
            "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
            "prometheusRule": {"enabled": True},
            "grafanaDashboard": {"enabled": True},
        },
    }
    rendered = template(helm, values, tmp_path, namespace="mon", api_versions=PROMETHEUS_OPERATOR)
    objects = {(o["kind"], o["metadata"]["name"]): o for o in rendered}
    service = objects[("Service", "kubesched-scheduler-metrics")]
    assert (
        service["spec"]["selector"] == objects[("Deployment", "kubesched-scheduler")]["spec"]["selector"]["matchLabels"]
    )
    monitor = objects[("ServiceMonitor", "kubesched-scheduler")]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    webhook_monitor = objects[("ServiceMonitor", "kubesched-webhook")]["spec"]["endpoints"][0]
    assert webhook_monitor["tlsConfig"]["serverName"] == "kubesched-webhook.mon.svc"
    # The CA from a ConfigMap of its own: whoever reads it cannot read the Secret holding tls.key.
    assert webhook_monitor["tlsConfig"]["ca"] == {"configMap": {"name": "kubesched-webhook-ca", "key": "ca.crt"}}
    ca = objects[("ConfigMap", "kubesched-webhook-ca")]["data"]["ca.crt"]
    secret = objects[("Secret", "kubesched-webhook-tls")]["data"]
    assert ca == base64.b64decode(secret["ca.crt"]).decode() and "PRIVATE KEY" not in ca
    dashboard = objects[("ConfigMap", "kubesched-grafana-dashboard")]
    shipped = (ROOT / "deploy" / "grafana" / "kubesched-scheduler.json").read_text()
    assert dashboard["data"]["kubesched-scheduler.json"].strip() == shipped.strip()
    rules = objects[("PrometheusRule", "kubesched")]["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules} == {
        "KubeschedPendingPodsHigh",
        "KubeschedScheduleErrors",
        "KubeschedLeaderMissing",
        "KubeschedConfigReloadRefused",
        "KubeschedWebhookErrors",
        "KubeschedServingCertificateExpiring",
        "KubeschedServingCertificateExpiringCritical",
        "KubeschedServingCertificateReloadRefused",
    }
    assert all('namespace="mon"' in r["expr"] for r in rules)


def test_the_charts_dashboard_is_the_shipped_one() -> None:
    """A real file (a symlink out of the chart breaks a copied chart), equal to deploy/grafana's: edit that one and
    copy it: cp deploy/grafana/kubesched-scheduler.json deploy/helm/kubesched/files/."""
    shipped = ROOT / "deploy" / "grafana" / "kubesched-scheduler.json"
    in_chart = CHART / "files" / "kubesched-scheduler.json"
    assert not in_chart.is_symlink() and in_chart.is_file()
    assert in_chart.read_bytes() == shipped.read_bytes(), "copy deploy/grafana/kubesched-scheduler.json to files/"


def test_monitoring_objects_only_where_the_operator_api_is_served(helm: Path, tmp_path: Path) -> None:
    """The README's install (ServiceMonitor and PrometheusRule on) works on a cluster without the Prometheus
    Operator: they are left out there, and the notes say so."""
    values = {
        "scheduler": {"enabled": True},
        "webhook": {"enabled": True},
        "metrics": {"service": True, "serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
    }
    without = {o["kind"] for o in template(helm, values, tmp_path)}
    assert not without & {"ServiceMonitor", "PrometheusRule"} and "Service" in without
    served = template(helm, values, tmp_path, api_versions=PROMETHEUS_OPERATOR)
    assert {"ServiceMonitor", "PrometheusRule"} <= {o["kind"] for o in served}


def test_cert_manager_mode_asks_for_the_ca_of_the_service_monitor(helm: Path, tmp_path: Path) -> None:
    values = {
        "webhook": {"enabled": True, "certificates": {"mode": "cert-manager"}},
        "metrics": {"serviceMonitor": {"enabled": True}},
    }
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    argv = ["template", "x", str(CHART), "-f", str(path), f"--api-versions={PROMETHEUS_OPERATOR[0]}"]
    proc = run_helm(helm, *argv, check=False)
    assert proc.returncode != 0 and "metrics.serviceMonitor.webhookCA: with webhook.certificates.mode" in proc.stderr
    values["metrics"]["serviceMonitor"]["webhookCA"] = {"configMap": {"name": "bundle", "key": "ca.crt"}}
    objects = template(helm, values, tmp_path, api_versions=PROMETHEUS_OPERATOR)
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    assert monitor["spec"]["endpoints"][0]["tlsConfig"]["ca"] == {"configMap": {"name": "bundle", "key": "ca.crt"}}
    assert not [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kubesched-webhook-ca"]


def test_generated_certificates_are_kept_by_the_ca_bundle(helm: Path, tmp_path: Path) -> None:
    objects = template(helm, {"webhook": {"enabled": True, "certificates": {"days": 30}}}, tmp_path)
    (secret,) = [o for o in objects if o["kind"] == "Secret"]
    (hook,) = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
    assert hook["webhooks"][0]["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    days = (cert.not_valid_after_utc - cert.not_valid_before_utc).days
    assert 29 <= days <= 30


async def test_every_alert_names_series_the_code_exports(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubesched.webhook.metrics import WebhookMetrics
    from tests.unit.scheduler.test_dashboard import _exported, _run, metric_names  # the dashboard's own check

    scheduler, _ = await _run(monkeypatch)
    scheduler.metrics.master_status.labels("kubesched-scheduler").set(1)  # set by leader election when live
    scheduler.metrics.reloads.labels("refused").inc()
    hook = WebhookMetrics()
    hook.requests.labels("/validate", "500").inc()
    pair = pki.serving_cert(pki.new_ca("ca"), "hook", ip_addresses=["127.0.0.1"])
    hook.registry.register(ServingTLS(*pair.write(tmp_path / "tls.crt", tmp_path / "tls.key")))  # as webhook serve
    exported = _exported(scheduler.metrics.render().decode()) | _exported(hook.render().decode())
    values = {
        "scheduler": {"enabled": True},
        "webhook": {"enabled": True},
        "metrics": {"prometheusRule": {"enabled": True}},
    }
    rendered = template(helm, values, tmp_path, api_versions=PROMETHEUS_OPERATOR)
    (rule,) = [o for o in rendered if o["kind"] == "PrometheusRule"]
    exprs = [r["expr"] for r in rule["spec"]["groups"][0]["rules"]]
    assert len(exprs) == 8
    for expr in exprs:
        names = metric_names(expr)
        assert names and not names - exported, f"{expr!r} names {sorted(names - exported)}, which nothing exports"


def test_the_serving_certificate_alerts_follow_their_thresholds(helm: Path, tmp_path: Path) -> None:
    """Warning and critical on the certificate's expiry (days from the values), and a refused reload alerts only
    while nothing was applied after it (`certs --force` writes tls.crt, then tls.key: refused once, then applied)."""
    values = {
        "webhook": {"enabled": True},
        "metrics": {
            "prometheusRule": {"enabled": True, "certificateExpiryWarningDays": 21, "certificateExpiryCriticalDays": 3}
        },
    }
    rendered = template(helm, values, tmp_path, namespace="mon", api_versions=PROMETHEUS_OPERATOR)
    (rule,) = [o for o in rendered if o["kind"] == "PrometheusRule"]
    rules = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    metric = 'kubesched_serving_certificate_expiration_timestamp_seconds{namespace="mon"}'
    warning = rules["KubeschedServingCertificateExpiring"]
    critical = rules["KubeschedServingCertificateExpiringCritical"]
    assert warning["expr"] == f"min by (namespace, pod) ({metric} - time()) < 21 * 86400"
    assert critical["expr"] == f"min by (namespace, pod) ({metric} - time()) < 3 * 86400"
    assert (warning["labels"], critical["labels"]) == ({"severity": "warning"}, {"severity": "critical"})
    assert "21 days" in warning["annotations"]["summary"] and "$labels.pod" in warning["annotations"]["description"]
    refused = rules["KubeschedServingCertificateReloadRefused"]["expr"]
    assert 'reloads_total{namespace="mon",result="refused"}[15m]) > 0' in refused
    applied = 'increase(kubesched_serving_certificate_reloads_total{namespace="mon",result="applied"}[15m]) > 0'
    assert refused.endswith(f"unless ignoring(result) {applied}")
    # Without the webhook (no TLS server in the chart) they are not rendered.
    values["webhook"]["enabled"] = False
    values["scheduler"] = {"enabled": True}
    rendered = template(helm, values, tmp_path, namespace="mon", api_versions=PROMETHEUS_OPERATOR)
    (rule,) = [o for o in rendered if o["kind"] == "PrometheusRule"]
    assert not [r for r in rule["spec"]["groups"][0]["rules"] if "Certificate" in r["alert"]]


def test_plugins_installed_in_the_image_are_named_as_modules(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other way to ship plugins: a package in your image, `pkg.mod:Class` in pluginModules, no ConfigMap."""
    (tmp_path / "gpu_plugins.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {**SCHED_CONFIG, "pluginModules": ["gpu_plugins:GpuModel"]}
    (tmp_path / "sched.yaml").write_text(yaml.safe_dump(config))
    values = {
        "image": {"repository": "reg.example/ks-gpu", "tag": "1"},
        "scheduler": {"enabled": True, "config": config},
    }
    chart = normal(template(helm, values, tmp_path), namespace="kubesched")
    manifests = normal(
        cli(["scheduler", "--image", "reg.example/ks-gpu:1", "--config", str(tmp_path / "sched.yaml")]),
        namespace="kubesched",
    )
    assert chart == manifests
    deployed = chart[("ConfigMap", "kubesched-scheduler")]["data"]["config.yaml"]
    assert deployed["pluginModules"] == ["gpu_plugins:GpuModel"]
    assert ("ConfigMap", "kubesched-scheduler-plugins") not in chart


def test_plugin_files_from_an_existing_config_map(helm: Path, tmp_path: Path) -> None:
    values = {"scheduler": {"enabled": True, "config": SCHED_CONFIG, "pluginConfigMap": "team-plugins"}}
    objects = {(o["kind"], o["metadata"]["name"]): o for o in template(helm, values, tmp_path)}
    assert ("ConfigMap", "kubesched-scheduler-plugins") not in objects
    pod = objects[("Deployment", "kubesched-scheduler")]["spec"]["template"]["spec"]
    assert {"name": "plugins", "configMap": {"name": "team-plugins"}} in pod["volumes"]
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "plugins", "mountPath": "/etc/kubesched/plugins", "readOnly": True} in mounts
    config = yaml.safe_load(objects[("ConfigMap", "kubesched-scheduler")]["data"]["config.yaml"])
    assert config["pluginModules"] == ["/etc/kubesched/plugins/gpu.py:GpuModel"]


@pytest.mark.parametrize(("namespace", "values", "flags"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_helm_values_of_the_cli_render_the_same_objects(
    helm: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    namespace: str,
    values: Callable[[Path], Obj],
    flags: Callable[[Path], list[str]],
) -> None:
    """`kubesched manifests ... --helm-values`: what the CLI read and checked, as the chart's values."""
    values(tmp_path)  # makes the files the flags name (certificates)
    argv = [*flags(tmp_path), "--namespace", namespace]
    capsys.readouterr()
    assert main(["manifests", *argv, "--helm-values"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# helm install kubesched deploy/helm/kubesched --namespace {namespace} ")
    printed = yaml.safe_load(out)
    assert "key" not in printed.get("webhook", {}).get("certificates", {}) or "--certs-dir" in argv
    chart = normal(template(helm, printed, tmp_path, namespace), namespace=namespace)
    assert chart == normal(cli(argv), namespace=namespace)


def test_helm_values_excludes_file_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "scheduler", "--helm-values", "-o", str(tmp_path)]) == 2
    assert "--helm-values: prints the values on stdout; drop -o/--kustomize" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["generate", "provided", "cert-manager", "manifests"])
def test_the_webhook_mounts_its_whole_secret_so_kubelet_updates_the_files(
    helm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    """A renewed Secret reaches the pod only through a whole-volume mount (kubelet never updates a `subPath`):
    then the webhook reloads its files and nothing has to roll (docs/deploy.md, Certificate rotation)."""
    if mode == "manifests":
        objects = cli(["webhook", "--generate-certs"])
    else:
        certificates = provided(certs(tmp_path, "kubesched")) if mode == "provided" else {"mode": mode}
        capsys.readouterr()
        objects = template(helm, {"webhook": {"enabled": True, "certificates": certificates}}, tmp_path, "kubesched")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "kubesched-webhook"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (volume,) = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == "kubesched-webhook-tls"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert "subPath" not in mount and "subPathExpr" not in mount and "items" not in volume["secret"]
    args = container["args"]
    for flag, name in (("--tls-cert", "tls.crt"), ("--tls-key", "tls.key")):
        assert args[args.index(flag) + 1] == f"{mount['mountPath']}/{name}"
