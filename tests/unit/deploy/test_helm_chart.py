"""The Helm chart (deploy/helm/kubesched) and `kubesched manifests` render the same objects for the same settings.

Each case gives the settings twice: as chart values and as `kubesched manifests` flags. Both renderings are put in
a normal form (helm_support.normal) and must be equal object for object, kind/name/spec.
"""

from __future__ import annotations

import base64
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser, main
from kubesched.deploy import render
from kubesched.policies import load as load_policy
from tests.unit.deploy.helm_support import CHART, ROOT, helm_binary, normal, run_helm, template

Obj = dict[str, Any]
EXAMPLES = ROOT / "examples"
PLUGIN = textwrap.dedent(
    """
    from kubesched.framework.interfaces import FilterPlugin


    class GpuModel(FilterPlugin):
        name = "GpuModel"

        def filter(self, state, pod, nodes):
            raise NotImplementedError
    """
)
SCHED_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 50,
    # Replaced by the Lease the Role grants, durations kept: the same by both renderings.
    "leaderElection": {"leaderElect": True, "leaseDuration": "20s", "renewDeadline": "15s", "resourceNamespace": "x"},
    "pluginModules": ["plugins/gpu.py:GpuModel"],
    "profiles": [
        {
            "schedulerName": "gpu",
            "plugins": {"multiPoint": {"enabled": [{"name": "GpuModel"}]}, "score": {"disabled": [{"name": "*"}]}},
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
        },
        {"schedulerName": "gpu-spread"},
    ],
}


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


def cli(argv: list[str]) -> list[Obj]:
    args = build_parser().parse_args(["manifests", *argv])
    return render.render(manifests_cmd.build_plan(args))


def licensed_resources() -> list[Obj]:
    policy = load_policy(str(EXAMPLES / "licensed_policy.py"))
    return [{"name": r.name, "ignoredByScheduler": r.ignored_by_scheduler} for r in policy.managed_resources]


def write_scheduler_config(tmp: Path) -> Path:
    (tmp / "plugins").mkdir(exist_ok=True)
    (tmp / "plugins" / "gpu.py").write_text(PLUGIN)
    (tmp / "sched.yaml").write_text(yaml.safe_dump(SCHED_CONFIG))
    return tmp / "sched.yaml"


def certs(tmp: Path, namespace: str) -> Path:
    assert main(["certs", "--out", str(tmp / "certs"), "--service", "kubesched-webhook", "--namespace", namespace]) == 0
    return tmp / "certs"


def provided(directory: Path) -> Obj:
    return {"mode": "provided", **{k: (directory / f).read_text() for k, f in _PEM_FILES.items()}}


_PEM_FILES = {"ca": "ca.crt", "cert": "tls.crt", "key": "tls.key"}
WEBHOOK_CONFIG = yaml.safe_load((EXAMPLES / "webhook-config.yaml").read_text())
LICENSED = (EXAMPLES / "licensed_policy.py").read_text()
PLAIN = LICENSED.replace('managed_resources=(ManagedResource("example.com/licence", ignored_by_scheduler=True),),', "")
assert PLAIN != LICENSED


RULES_PY = "def check(pod, request):\n    return None\n\n\ndef label(pod, request):\n    return None\n"
PYTHON_RULES = {
    "apiVersion": "kubesched.io/v1alpha1",
    "kind": "WebhookConfig",
    "operations": ["UPDATE", "CREATE"],
    "rules": [
        {"name": "team", "python": "rules.py:check"},
        {"name": "label", "python": "rules.py:label", "phase": "mutate"},
        {"name": "gpu-label", "requireLabel": {"schedulerName": "gpu", "label": "team", "action": "warn"}},
    ],
}


def write_rules(tmp: Path) -> Path:
    (tmp / "hooks").mkdir(exist_ok=True)
    (tmp / "hooks" / "rules.py").write_text(RULES_PY)
    return write(tmp / "hooks" / "webhook.yaml", yaml.safe_dump(PYTHON_RULES))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# (id, namespace, values(tmp), flags(tmp)): the same settings, as chart values and as manifests flags.
Case = tuple[str, str, Callable[[Path], Obj], Callable[[Path], list[str]]]
CASES: list[Case] = [
    ("scheduler", "kubesched", lambda t: {"scheduler": {"enabled": True}}, lambda t: ["scheduler"]),
    (
        "scheduler-named",
        "team-a",
        lambda t: {"image": "reg.example/ks:1", "scheduler": {"enabled": True, "schedulerName": "batch"}},
        lambda t: ["scheduler", "--namespace", "team-a", "--image", "reg.example/ks:1", "--scheduler-name", "batch"],
    ),
    (
        "scheduler-config-plugins",
        "kubesched",
        lambda t: {"scheduler": {"enabled": True, "config": SCHED_CONFIG, "pluginFiles": {"gpu.py": PLUGIN}}},
        lambda t: [
            "scheduler",
            "--config",
            str(write_scheduler_config(t)),
            "--plugin-module",
            str(t / "plugins/gpu.py"),
        ],
    ),
    ("extender", "kubesched", lambda t: {"extender": {"enabled": True}}, lambda t: ["extender"]),
    (
        "extender-policy-file-bind",
        "ops",
        lambda t: {
            "extender": {
                "enabled": True,
                "bind": True,
                "policy": "licensed_policy.py",
                "policyFiles": {"licensed_policy.py": LICENSED},
                "managedResources": licensed_resources(),
                "schedulerName": "licensed",
                "kubeSchedulerImage": "reg.example/kube-scheduler:v1.35.4",
            }
        },
        lambda t: [
            "extender",
            "--namespace",
            "ops",
            "--bind",
            "--policy",
            str(EXAMPLES / "licensed_policy.py"),
            "--scheduler-name",
            "licensed",
            "--kube-scheduler-image",
            "reg.example/kube-scheduler:v1.35.4",
        ],
    ),
    (
        "extender-no-managed-resources",
        "kubesched",
        lambda t: {
            "extender": {
                "enabled": True,
                "policy": "plain.py:policy",
                "policyFiles": {"plain.py": PLAIN},
                "managedResources": [],
            }
        },
        lambda t: ["extender", "--policy", f"{write(t / 'plain.py', PLAIN)}:policy"],
    ),
    (
        "webhook-generated",
        "kubesched",
        lambda t: {"webhook": {"enabled": True}},
        lambda t: ["webhook", "--generate-certs"],
    ),
    (
        "webhook-provided-rules",
        "hooks",
        lambda t: {
            "webhook": {
                "enabled": True,
                "config": WEBHOOK_CONFIG,
                "certificates": provided(certs(t, "hooks")),
                "excludeNamespaces": ["monitoring"],
                "timeoutSeconds": 3,
            }
        },
        lambda t: [
            "webhook",
            "--namespace",
            "hooks",
            "--webhook-config",
            str(EXAMPLES / "webhook-config.yaml"),
            "--certs-dir",
            str(t / "certs"),
            "--exclude-namespace",
            "monitoring",
            "--webhook-timeout",
            "3",
        ],
    ),
    (
        "webhook-python-rules",
        "kubesched",
        lambda t: {
            "webhook": {
                "enabled": True,
                "config": PYTHON_RULES,
                "files": {"rules.py": RULES_PY},
                "certificates": provided(certs(t, "kubesched")),
            }
        },
        lambda t: ["webhook", "--webhook-config", str(write_rules(t)), "--certs-dir", str(t / "certs")],
    ),
    (
        "webhook-failure-policy",
        "kubesched",
        lambda t: {"webhook": {"enabled": True, "validatingFailurePolicy": "Fail", "schedulerNames": ["a", "b"]}},
        lambda t: [
            "webhook",
            "--generate-certs",
            "--validating-failure-policy",
            "Fail",
            "--scheduler-name",
            "a",
            "--extender-scheduler-name",
            "b",
        ],
    ),
    (
        "all",
        "kubesched",
        lambda t: {"scheduler": {"enabled": True}, "extender": {"enabled": True}, "webhook": {"enabled": True}},
        lambda t: ["all", "--generate-certs"],
    ),
    (
        "all-config-bind",
        "k2",
        lambda t: {
            "scheduler": {"enabled": True, "config": SCHED_CONFIG, "pluginFiles": {"gpu.py": PLUGIN}},
            "extender": {"enabled": True, "bind": True, "schedulerName": "ext"},
            "webhook": {"enabled": True, "excludeNamespaces": ["monitoring"]},
        },
        lambda t: [
            "all",
            "--namespace",
            "k2",
            "--generate-certs",
            "--config",
            str(write_scheduler_config(t)),
            "--plugin-module",
            str(t / "plugins/gpu.py"),
            "--bind",
            "--extender-scheduler-name",
            "ext",
            "--exclude-namespace",
            "monitoring",
        ],
    ),
]


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
    objects = {(o["kind"], o["metadata"]["name"]): o for o in template(helm, values, tmp_path, namespace="mon")}
    service = objects[("Service", "kubesched-scheduler-metrics")]
    assert (
        service["spec"]["selector"] == objects[("Deployment", "kubesched-scheduler")]["spec"]["selector"]["matchLabels"]
    )
    monitor = objects[("ServiceMonitor", "kubesched-scheduler")]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    webhook_monitor = objects[("ServiceMonitor", "kubesched-webhook")]["spec"]["endpoints"][0]
    assert webhook_monitor["tlsConfig"]["serverName"] == "kubesched-webhook.mon.svc"
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
    }
    assert all('namespace="mon"' in r["expr"] for r in rules)


def test_the_charts_dashboard_is_the_shipped_one() -> None:
    shipped = ROOT / "deploy" / "grafana" / "kubesched-scheduler.json"
    assert (CHART / "files" / "kubesched-scheduler.json").resolve() == shipped.resolve()


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
    exported = _exported(scheduler.metrics.render().decode()) | _exported(hook.render().decode())
    values = {
        "scheduler": {"enabled": True},
        "webhook": {"enabled": True},
        "metrics": {"prometheusRule": {"enabled": True}},
    }
    (rule,) = [o for o in template(helm, values, tmp_path) if o["kind"] == "PrometheusRule"]
    exprs = [r["expr"] for r in rule["spec"]["groups"][0]["rules"]]
    assert len(exprs) == 5
    for expr in exprs:
        names = metric_names(expr)
        assert names and not names - exported, f"{expr!r} names {sorted(names - exported)}, which nothing exports"


def test_plugins_installed_in_the_image_are_named_as_modules(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other way to ship plugins: a package in your image, `pkg.mod:Class` in pluginModules, no ConfigMap."""
    (tmp_path / "gpu_plugins.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {**SCHED_CONFIG, "pluginModules": ["gpu_plugins:GpuModel"]}
    (tmp_path / "sched.yaml").write_text(yaml.safe_dump(config))
    values = {"image": "reg.example/ks-gpu:1", "scheduler": {"enabled": True, "config": config}}
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
