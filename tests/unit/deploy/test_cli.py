"""`kubesched manifests`: modes, inputs read from files, output to stdout or a directory, and bad input (exit 2)."""

from __future__ import annotations

import base64
import ssl
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def manifests(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["manifests", *argv]) == 0
    return list(yaml.safe_load_all(capsys.readouterr().out))


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


def make_certs(out: Path, namespace: str = "kubesched") -> Path:
    assert main(["certs", "--out", str(out), "--service", "kubesched-webhook", "--namespace", namespace]) == 0
    return out


@pytest.mark.parametrize("mode", ["extender", "scheduler", "webhook", "all"])
def test_every_mode_renders_a_yaml_stream(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(capsys, mode, "--generate-certs" if mode in ("webhook", "all") else "--image=kubesched:test")
    assert objects[0]["kind"] == "Namespace"
    assert all(o["metadata"].get("namespace") in (None, "kubesched", "kube-system") for o in objects)


def test_certs_from_kubesched_certs_become_the_secret_and_the_ca_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    certs = make_certs(tmp_path / "certs")
    capsys.readouterr()
    objects = manifests(capsys, "webhook", "--certs-dir", str(certs))
    hook = find(objects, "ValidatingWebhookConfiguration", "kubesched-webhook.kubesched")["webhooks"][0]
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == (certs / "ca.crt").read_bytes()
    secret = find(objects, "Secret", "kubesched-webhook-tls")
    assert base64.b64decode(secret["data"]["tls.key"]) == (certs / "tls.key").read_bytes()


def test_a_renewal_trusts_both_cas_then_the_new_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/deploy.md, Certificate rotation: ca.crt = the new CA, then the old one; the caBundle holds both (the
    pods still serving the old certificate stay trusted), then the new CA alone."""
    old, new = make_certs(tmp_path / "certs"), make_certs(tmp_path / "certs-new")
    new_ca = (new / "ca.crt").read_bytes()
    (new / "ca.crt").write_bytes(new_ca + (old / "ca.crt").read_bytes())
    capsys.readouterr()
    objects = manifests(capsys, "webhook", "--certs-dir", str(new))
    bundle = base64.b64decode(
        find(objects, "ValidatingWebhookConfiguration", "kubesched-webhook.kubesched")["webhooks"][0]["clientConfig"][
            "caBundle"
        ]
    )
    assert bundle == new_ca + (old / "ca.crt").read_bytes()
    trusted = ssl.create_default_context(cadata=bundle.decode())
    assert len(trusted.get_ca_certs()) == 2
    # The old CA first would not have signed the new tls.crt: refused, as any CA that did not sign it.
    (new / "ca.crt").write_bytes((old / "ca.crt").read_bytes() + new_ca)
    assert main(["manifests", "webhook", "--certs-dir", str(new)]) == 2
    assert "tls.crt was not signed by ca.crt" in capsys.readouterr().err


def test_certs_for_another_namespace_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    certs = make_certs(tmp_path / "certs", namespace="elsewhere")
    assert main(["manifests", "webhook", "--certs-dir", str(certs)]) == 2
    err = capsys.readouterr().err
    assert "--certs-dir: tls.crt does not name kubesched-webhook.kubesched.svc" in err


def test_a_policy_file_is_shipped_in_a_config_map(capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(
        capsys,
        "extender",
        "--policy",
        str(EXAMPLES / "licensed_policy.py"),
        "--bind",
        "--generate-certs",
        "--load-plugins",
    )
    assert "LicensedZone" in find(objects, "ConfigMap", "kubesched-extender-policy")["data"]["licensed_policy.py"]
    args = find(objects, "Deployment", "kubesched-extender")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--policy") + 1] == "/etc/kubesched/policy/licensed_policy.py"
    assert args[args.index("--plugins-from") + 1] == "files"  # the file ships in a ConfigMap
    config = yaml.safe_load(find(objects, "ConfigMap", "kubesched-extender-scheduler")["data"]["config.yaml"])
    (extender,) = config["extenders"]
    assert extender["managedResources"] == [{"name": "example.com/licence", "ignoredByScheduler": True}]
    assert extender["bindVerb"] == "bind"


def test_the_example_webhook_config_registers_both_hooks(capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(
        capsys, "webhook", "--generate-certs", "--webhook-config", str(EXAMPLES / "webhook-config.yaml")
    )
    mutating = find(objects, "MutatingWebhookConfiguration", "kubesched-webhook.kubesched")["webhooks"][0]
    fail_open, validating = find(objects, "ValidatingWebhookConfiguration", "kubesched-webhook.kubesched")["webhooks"]
    assert (mutating["failurePolicy"], fail_open["failurePolicy"], validating["failurePolicy"]) == (
        "Ignore",
        "Ignore",
        "Fail",
    )
    assert validating["name"] == "validate-fail-closed.kubesched.io"
    assert "matchConditions" not in validating  # can-fit-elsewhere warns on every pod
    assert find(objects, "ClusterRole", "kubesched-webhook.kubesched")["rules"][0]["resources"] == ["nodes"]


def test_python_rule_files_travel_with_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rules.py").write_text("def check(pod, request):\n    return None\n")
    config = tmp_path / "config.yaml"
    config.write_text("rules:\n- {name: team, python: rules.py:check}\n- requireLabel: {schedulerName: k, label: c}\n")
    objects = manifests(capsys, "webhook", "--generate-certs", "--webhook-config", str(config))
    data = find(objects, "ConfigMap", "kubesched-webhook-config")["data"]
    assert set(data) == {"config.yaml", "rules.py"}
    validating = find(objects, "ValidatingWebhookConfiguration", "kubesched-webhook.kubesched")["webhooks"][1]
    assert validating["failurePolicy"] == "Fail" and "matchConditions" not in validating
    assert not [o for o in objects if o["kind"] == "ClusterRole"]


def test_in_all_mode_the_default_rules_cover_both_schedulers(capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(capsys, "all", "--generate-certs", "--scheduler-name", "mine")
    config = yaml.safe_load(find(objects, "ConfigMap", "kubesched-webhook-config")["data"]["config.yaml"])
    assert config["rules"][0]["feasibility"]["schedulerNames"] == ["mine", "kubesched-extender-scheduler"]
    validating = find(objects, "ValidatingWebhookConfiguration", "kubesched-webhook.kubesched")["webhooks"][0]
    assert validating["failurePolicy"] == "Ignore"  # warnings only
    assert "'kubesched-extender-scheduler', 'mine'" in validating["matchConditions"][0]["expression"]


def webhook_access(objects: list[dict[str, Any]]) -> tuple[list[str], dict[str, list[str]], bool]:
    """The webhook container's args, what its ClusterRole grants (resource -> verbs), whether its pods get a token."""
    deployment = find(objects, "Deployment", "kubesched-webhook")["spec"]["template"]["spec"]
    roles = [o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"].startswith("kubesched-webhook")]
    granted = {r: rule["verbs"] for role in roles for rule in role["rules"] for r in rule["resources"]}
    return deployment["containers"][0]["args"], granted, deployment.get("automountServiceAccountToken", True)


@pytest.mark.parametrize("mode", ["webhook", "all"])
def test_managed_resources_reach_the_webhook_with_pods_access_only_then(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, granted, _ = webhook_access(manifests(capsys, mode, "--generate-certs"))
    assert "--managed-resource" not in args
    assert granted == {"nodes": ["get", "list", "watch"]}  # the default feasibility rule: nodes, never pods
    flags = ["--webhook-managed-resource", "nvidia.com/gpu", "--webhook-managed-resource", "example.com/fpga"]
    args, granted, token = webhook_access(manifests(capsys, mode, "--generate-certs", *flags, flags[0], flags[1]))
    assert args[args.index("--managed-resource") :] == [
        "--managed-resource", "nvidia.com/gpu", "--managed-resource", "example.com/fpga"
    ]  # fmt: skip
    assert granted == {"nodes": ["get", "list", "watch"], "pods": ["get", "list", "watch"]} and token


def test_managed_resources_alone_give_the_webhook_api_access(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = {"rules": [{"name": "team", "requireLabel": {"schedulerName": "gpu", "label": "team"}}]}
    config = tmp_path / "rules.yaml"
    config.write_text(yaml.safe_dump(rules))
    _, granted, token = webhook_access(
        manifests(capsys, "webhook", "--generate-certs", "--webhook-config", str(config))
    )
    assert granted == {} and not token  # no feasibility rule, no managed resource: the webhook never calls the API
    argv = ["webhook", "--generate-certs", "--webhook-config", str(config), "--webhook-managed-resource", "cpu"]
    args, granted, token = webhook_access(manifests(capsys, *argv))
    assert args[-2:] == ["--managed-resource", "cpu"]
    assert granted == {"nodes": ["get", "list", "watch"], "pods": ["get", "list", "watch"]} and token


def test_extender_mode_takes_its_scheduler_name_from_either_option(capsys: pytest.CaptureFixture[str]) -> None:
    objects = manifests(capsys, "extender", "--scheduler-name", "second")
    config = yaml.safe_load(find(objects, "ConfigMap", "kubesched-extender-scheduler")["data"]["config.yaml"])
    assert config["profiles"] == [{"schedulerName": "second"}]


def test_output_directory_gets_one_file_per_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "zz-old.yaml").write_text("{}\n")
    assert main(["manifests", "scheduler", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    written = captured.out.split()
    assert written[0].endswith("00-namespace-kubesched.yaml") and len(written) == 8
    assert all(Path(p).is_file() for p in written)
    assert "zz-old.yaml was not rendered now" in captured.err


@pytest.mark.parametrize("certs", ["--generate-certs", "--certs-dir"])
def test_the_file_of_the_secret_holding_the_key_is_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], certs: str
) -> None:
    """Written 0600, also over a file of an earlier run left readable; the other files as the umask makes them."""
    out = tmp_path / "out"
    flags = [certs] if certs == "--generate-certs" else [certs, str(make_certs(tmp_path / "pki"))]
    assert main(["manifests", "webhook", *flags, "-o", str(out)]) == 0
    (secret,) = out.glob("*-secret-*.yaml")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert "tls.key" in yaml.safe_load(secret.read_text())["data"]
    others = [p for p in out.glob("*.yaml") if p != secret]
    assert others and all(stat.S_IMODE(p.stat().st_mode) & 0o044 for p in others)
    secret.chmod(0o644)
    assert main(["manifests", "webhook", *flags, "-o", str(out)]) == 0
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["webhook"], "the webhook needs a serving certificate: --certs-dir DIR"),
        (["scheduler", "--policy", "custom-label"], "--policy: does not apply to mode scheduler"),
        (["scheduler", "--bind"], "--bind: does not apply to mode scheduler"),
        (["extender", "--generate-certs"], "--generate-certs: does not apply to mode extender"),
        (["scheduler", "--extender-scheduler-name", "x"], "--extender-scheduler-name: does not apply"),
        (["extender", "--namespace", "Bad_NS"], "--namespace: 'Bad_NS' is not a DNS label"),
        (["scheduler", "--scheduler-name", "Bad Name"], "--scheduler-name: 'Bad Name' is not a DNS subdomain"),
        (["extender", "--scheduler-name", "a", "--extender-scheduler-name", "b"], "extender mode has one scheduler"),
        (["all", "--generate-certs", "--scheduler-name", "kubesched-extender-scheduler"], "--extender-scheduler-name:"),
        (["extender", "--policy", "no-such-policy"], "--policy: unknown policy 'no-such-policy'"),
        (["webhook", "--generate-certs", "--webhook-timeout", "0"], "--webhook-timeout: must be 1-30"),
        (["webhook", "--generate-certs", "--exclude-namespace", "Nope"], "--exclude-namespace: 'Nope'"),
        (["webhook", "--generate-certs", "--webhook-config", "/no/such.yaml"], "--webhook-config: cannot read"),
        (["webhook", "--certs-dir", "/no/such/dir"], "--certs-dir: cannot read /no/such/dir/ca.crt"),
        (["all", "--kustomize"], "--kustomize: give the directory with -o DIR"),
        (["all", "--kustomize", "-o", "x", "--generate-certs"], "--kustomize: the base makes the Secrets"),
        (["extender", "--image", ""], "--image: '' is not an image reference"),
        (["scheduler", "--fail-closed-label", "a=b"], "--fail-closed-label: does not apply to mode scheduler"),
        (["webhook", "--generate-certs", "--fail-closed-label", "strict"], "--fail-closed-label: 'strict' is not KEY"),
        (["webhook", "--generate-certs", "--fail-closed-label", "a b=c"], "--fail-closed-label: 'a b' is not a label"),
        (["webhook", "--generate-certs", "--fail-closed-label", "a=b c"], "--fail-closed-label: 'b c' is not a label"),
        (["extender", "--webhook-managed-resource", "example.com/gpu"], "--webhook-managed-resource: does not apply"),
        (
            ["webhook", "--generate-certs", "--webhook-managed-resource", "nvidia.com/gpu x"],
            "--webhook-managed-resource 'nvidia.com/gpu x': not a resource name: name part must consist of",
        ),
        (
            ["all", "--generate-certs", "--webhook-managed-resource", "Bad_Domain/gpu"],
            "prefix part must be a lowercase",
        ),
    ],
)
def test_bad_input_names_the_option(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubesched: error:") and message in err, err
    assert "Traceback" not in err


def test_an_invalid_webhook_config_lists_its_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("rules:\n- requireLabel: {label: custom}\n- python: sub/rules.py:check\n")
    assert main(["manifests", "webhook", "--generate-certs", "--webhook-config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "invalid webhook config" in err and "rules[0].requireLabel.schedulerName: required" in err


def test_a_python_rule_outside_the_config_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "rules.py").write_text("def check(pod, request):\n    return None\n")
    config = tmp_path / "config.yaml"
    config.write_text("rules:\n- {name: team, python: sub/rules.py:check}\n")
    assert main(["manifests", "webhook", "--generate-certs", "--webhook-config", str(config)]) == 2
    assert "sub/rules.py must sit beside the config file" in capsys.readouterr().err
