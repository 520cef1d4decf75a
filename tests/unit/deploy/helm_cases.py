"""The settings the chart and `kubesched manifests` are compared on: each as chart values and as CLI flags."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser, main
from kubesched.deploy import render
from kubesched.policies import load as load_policy
from tests.unit.deploy.helm_support import ROOT

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
_EXTENDER_PEMS = {**_PEM_FILES, "clientCert": "client.crt", "clientKey": "client.key"}


def extender_certs(tmp: Path, namespace: str) -> Path:
    """`kubesched certs` for the binding extender: its serving certificate and kube-scheduler's client one."""
    out = tmp / "extender-certs"
    if not (out / "ca.crt").exists():
        argv = ["certs", "--out", str(out), "--service", "kubesched-extender", "--namespace", namespace]
        assert main([*argv, "--client", "kube-scheduler"]) == 0
    return out


def extender_provided(directory: Path) -> Obj:
    return {"mode": "provided", **{k: (directory / f).read_text() for k, f in _EXTENDER_PEMS.items()}}


WEBHOOK_CONFIG = yaml.safe_load((EXAMPLES / "webhook-config.yaml").read_text())
LICENSED = (EXAMPLES / "licensed_policy.py").read_text()
PLAIN = LICENSED.replace(
    'managed_resources=(plugin.ManagedResource("example.com/licence", ignored_by_scheduler=True),),', ""
)
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
        lambda t: {
            "image": {"repository": "reg.example/ks", "tag": "1"},
            "scheduler": {"enabled": True, "schedulerName": "batch"},
        },
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
                "kubeSchedulerImage": "reg.example/kube-scheduler:v1.37.2",
            }
        },
        lambda t: [
            "extender",
            "--namespace",
            "ops",
            "--bind",
            "--generate-certs",
            "--policy",
            str(EXAMPLES / "licensed_policy.py"),
            "--load-plugins",
            "--scheduler-name",
            "licensed",
            "--kube-scheduler-image",
            "reg.example/kube-scheduler:v1.37.2",
        ],
    ),
    (
        "extender-watch-no-bind-provided-certs",
        "ops",
        lambda t: {
            "extender": {
                "enabled": True,
                "watchPods": "no",
                "bind": True,
                "certificates": extender_provided(extender_certs(t, "ops")),
            }
        },
        lambda t: [
            "extender",
            "--watch-pods",
            "no",
            "--bind",
            "--extender-certs-dir",
            str(extender_certs(t, "ops")),
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
        lambda t: ["extender", "--policy", f"{write(t / 'plain.py', PLAIN)}:policy", "--load-plugins"],
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
        # A rule that can deny: fail-closed under the user's label only; the user's list of dependencies.
        "webhook-fail-closed-label",
        "kubesched",
        lambda t: {
            "webhook": {
                "enabled": True,
                "config": PYTHON_RULES,
                "files": {"rules.py": RULES_PY},
                "failClosedNamespaceLabel": {"key": "team.example.com/admission", "value": "strict"},
                "excludeNamespaces": ["security", "calico-system"],
            }
        },
        lambda t: [
            "webhook",
            "--webhook-config",
            str(write_rules(t)),
            "--generate-certs",
            "--fail-closed-label",
            "team.example.com/admission=strict",
            "--exclude-namespace",
            "security",
            "--exclude-namespace",
            "calico-system",
        ],
    ),
    (
        "scheduler-image-digest",
        "kubesched",
        lambda t: {
            "image": {"repository": "reg.example:5000/ks", "digest": "sha256:" + "ab" * 32},
            "scheduler": {"enabled": True},
        },
        lambda t: ["scheduler", "--image", "reg.example:5000/ks@sha256:" + "ab" * 32],
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
        "webhook-managed-resources",
        "kubesched",
        lambda t: {"webhook": {"enabled": True, "managedResources": ["nvidia.com/gpu", "example.com/fpga"]}},
        lambda t: [
            "webhook",
            "--generate-certs",
            "--webhook-managed-resource",
            "nvidia.com/gpu",
            "--webhook-managed-resource",
            "example.com/fpga",
        ],
    ),
    (
        # No feasibility rule: the managed resource alone makes the webhook call the API (nodes and pods).
        "webhook-managed-resources-python-rules",
        "kubesched",
        lambda t: {
            "webhook": {
                "enabled": True,
                "config": PYTHON_RULES,
                "files": {"rules.py": RULES_PY},
                "managedResources": ["cpu"],
            }
        },
        lambda t: [
            "webhook",
            "--webhook-config",
            str(write_rules(t)),
            "--generate-certs",
            "--webhook-managed-resource",
            "cpu",
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
