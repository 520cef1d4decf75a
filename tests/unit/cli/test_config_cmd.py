"""The `kubesched config` commands: extender, validate."""

from __future__ import annotations

import argparse
import base64
import importlib
import json
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kubesched.config.render import render_legacy_policy
from kubesched.errors import CLIError
from kubesched.versions import REFERENCE
from tests.unit.config.extenders import GOLDEN, PEM, URL, ext, v1


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[[Sequence[str]], int]:
    """`kubesched.cli.main.main`. Sibling subcommands that cannot be imported (still being written) are stubbed,
    so these tests exercise `config` alone."""
    for name in ("extender_cmd", "dev_cluster"):
        full = f"kubesched.cli.{name}"
        try:
            importlib.import_module(full)
        except ImportError:
            stub = types.ModuleType(full)
            stub.register = lambda sub: None  # type: ignore[attr-defined]
            monkeypatch.setitem(sys.modules, full, stub)
            monkeypatch.delitem(sys.modules, "kubesched.cli.main", raising=False)
    from kubesched.cli.main import main

    return main


def test_cli_default_prints_golden_yaml_that_validates(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli(["config", "extender", "--url-prefix", URL]) == 0
    out = capsys.readouterr()
    assert out.out == GOLDEN.read_text()
    assert out.err == ""
    written = tmp_path / "config.yaml"
    written.write_text(out.out)
    assert cli(["config", "validate", str(written)]) == 0
    assert capsys.readouterr().out == "ok\n"


def test_cli_failure_lists_every_problem_without_traceback(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["config", "extender", "--url-prefix", "http://e/s", "--weight", "0", "--enable-https"]
    argv += ["--managed-resource", "gpu", "--http-timeout=-2s"]
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "kubesched: error: invalid extender configuration (4 problems):" in err
    for path in ("weight", "managedResources[0].name", "urlPrefix", "httpTimeout"):
        assert f"\n  extenders[0].{path}: " in err
    assert "kubesched: warning: extenders[0].tlsConfig: enableHTTPS without caFile" in err


def test_cli_bad_flag_values_are_user_errors(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["config", "extender", "--url-prefix", URL, "--http-timeout", "5"]) == 2
    assert cli(["config", "extender", "--url-prefix", URL, "--managed-resource", "example.com/a=maybe"]) == 2
    assert cli(["config", "extender", "--url-prefix", URL, "--embed-tls-data"]) == 2
    assert cli(["config", "extender", "--url-prefix", URL, "--legacy-policy", "--scheduler-name", "x"]) == 2
    err = capsys.readouterr().err
    assert 'kubesched: error: --http-timeout: missing unit in duration "5"' in err
    assert "expected NAME or NAME=ignored" in err
    assert "--scheduler-name: a legacy Policy has no such field" in err
    assert "Traceback" not in err


def test_cli_legacy_policy_and_embedded_tls(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text(PEM)
    argv = ["config", "extender", "--url-prefix", "https://e:8443/s", "--enable-https", "--ca-file", str(ca)]
    assert cli([*argv, "--embed-tls-data", "--http-timeout", "1m30s", "--legacy-policy"]) == 0
    policy = json.loads(capsys.readouterr().out)
    extender = policy["extenders"][0]
    assert (policy["kind"], extender["enableHttps"], extender["httpTimeout"]) == ("Policy", True, 90_000_000_000)
    assert base64.b64decode(extender["tlsConfig"]["caData"]) == PEM.encode()

    out = tmp_path / "sched.json"
    assert (
        cli([*argv, "--scheduler-name", "kubesched", "--lease-name", "kubesched", "--format", "json", "-o", str(out)])
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc["leaderElection"] == {"leaderElect": True, "resourceName": "kubesched"}
    assert doc["profiles"] == [{"schedulerName": "kubesched"}]
    assert doc["extenders"][0]["tlsConfig"] == {"caFile": str(ca)}


@dataclass(frozen=True)
class _FakeResource:
    name: str
    ignored_by_scheduler: bool


def test_cli_policy_supplies_managed_resources(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def load(spec: str) -> object:
        if spec != "gpu":
            raise ValueError(f"unknown policy {spec!r}")
        return types.SimpleNamespace(managed_resources=(_FakeResource("example.com/gpu", True),))

    fake = types.ModuleType("kubesched.policies")
    fake.load = load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kubesched.policies", fake)
    assert cli(["config", "extender", "--url-prefix", URL, "--policy", "gpu"]) == 0
    out = capsys.readouterr()
    doc = yaml.safe_load(out.out)
    assert doc["extenders"][0]["managedResources"] == [{"name": "example.com/gpu", "ignoredByScheduler": True}]
    # No bind verb: the file and stderr say the resource cannot be reserved.
    assert out.out.startswith("# WARNING: no bindVerb, so managed resources cannot be reserved")
    assert "kubesched: warning: extenders[0].bindVerb: is empty while 'example.com/gpu'" in out.err
    assert cli(["config", "extender", "--url-prefix", URL, "--policy", "gpu", "--bind-verb", "bind"]) == 0
    out = capsys.readouterr()
    assert not out.out.startswith("#") and "bindVerb" not in out.err
    assert cli(["config", "extender", "--url-prefix", URL, "--policy", "nope"]) == 2
    assert "kubesched: error: --policy nope: unknown policy 'nope'" in capsys.readouterr().err


def test_cli_validate_reports_every_problem_in_a_file(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    doc = v1(
        {"urlPrefix": URL, "prioritizeVerb": "p", "weight": "high", "enableHttps": True},
        {"urlPrefix": URL, "bindVerb": "b", "managedResources": [{"name": "gpu"}]},
        {"urlPrefix": URL, "bindVerb": "b"},
    )
    path.write_text(yaml.safe_dump(doc))
    assert cli(["config", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"kubesched: error: {path} is invalid (4 problems):" in err
    assert "\n  extenders[0].enableHttps: unknown field" in err
    assert "\n  extenders[0].weight: must be an integer" in err
    # The unparsable weight is not also reported as "must have a positive weight".
    assert "positive weight" not in err
    assert (
        '\n  extenders[1].managedResources[0].name: Invalid value: "gpu": is an invalid extended resource name' in err
    )
    assert (
        '\n  extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'
        in err
    )
    assert cli(["config", "validate", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_validate_accepts_a_legacy_policy(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(render_legacy_policy([ext()])))
    assert cli(["config", "validate", str(path)]) == 0
    assert capsys.readouterr().out == "ok\n"


def test_cli_validate_warns_but_accepts_an_unreserved_resource(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["config", "extender", "--url-prefix", URL, "--managed-resource", "example.com/gpu=ignored"]
    assert cli(argv) == 0
    generated = capsys.readouterr().out
    assert generated.startswith("# WARNING: no bindVerb")
    written = tmp_path / "config.yaml"
    written.write_text(generated)
    assert cli(["config", "validate", str(written)]) == 0
    out = capsys.readouterr()
    assert out.out == "ok\n"
    assert "warning: extenders[0].bindVerb: is empty while 'example.com/gpu' is ignoredByScheduler" in out.err
    assert cli([*argv, "--format", "json"]) == 0  # JSON has no comments: the warning goes to stderr only
    out = capsys.readouterr()
    assert out.out.startswith("{") and "extenders[0].bindVerb" in out.err


# ---- one validator: `config validate` and `scheduler run --config` agree --------------------------------

SCHED_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
PARITY = {
    "unknown-field": "profiles:\n- schedulerName: s\n  plugins:\n    score:\n      enabled:\n"
    "      - {name: NodeResourcesFit, wieght: 3}\n",
    "unknown-plugin": "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n      enabled: [{name: NodeResourceFit}]\n",  # noqa: E501 - test data on one line
    "bad-strategy": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeResourcesFit\n"
    "    args: {scoringStrategy: {type: MostAlocated}}\n",
    "duplicate-key": "parallelism: 2\nparallelism: 3\n",
    "bad-module": "pluginModules: ['nowhere.py:Nope']\n",
    "wrong-types": "profiles: {schedulerName: s}\nparallelism: many\n",
    "plugin-own-check": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeResourcesFit\n"
    "    args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: []}}}\n",
    "unrunnable": "profiles:\n- schedulerName: s\n  plugins:\n    permit:\n      enabled: [{name: GangScheduling}]\n",
    "valid": "profiles:\n- schedulerName: s\n",
    "valid-with-module": "pluginModules: ['mine.py:Mine']\nprofiles:\n- schedulerName: s\n  plugins:\n"
    "    filter:\n      enabled: [{name: Mine}]\n",
}
MINE = "from kubesched import plugin\n\nclass Mine(plugin.FilterPlugin):\n    name = 'Mine'\n\n" + (
    "    def filter(self, state, pod, nodes):\n        return None\n"
)


def _problems(err: str) -> list[str]:
    return [line.strip() for line in err.splitlines() if line.startswith("  ")]


@pytest.mark.parametrize("case", sorted(PARITY))
def test_config_validate_and_scheduler_run_give_one_verdict(
    case: str, cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "mine.py").write_text(MINE)
    (tmp_path / "cluster.json").write_text('{"kind": "List", "items": []}')
    path = tmp_path / f"{case}.yaml"
    path.write_text(SCHED_HEAD + PARITY[case])
    validated = cli(["config", "validate", str(path)])
    v_out, v_err = capsys.readouterr()
    ran = cli(["scheduler", "run", "--config", str(path), "--cluster", str(tmp_path / "cluster.json")])
    _, r_err = capsys.readouterr()
    if case == "unrunnable":  # kube-scheduler accepts it: validate says so and warns; our scheduler cannot run it
        assert (validated, ran) == (0, 2)
        assert 'kubesched: warning: profiles[0].plugins.permit.enabled[0].name: plugin "GangScheduling"' in v_err
        assert _problems(r_err)[0].startswith('profiles[0].plugins.permit.enabled[0].name: plugin "GangScheduling"')
        return
    assert validated == ran, (v_err, r_err)
    if case.startswith("valid"):
        assert (validated, v_out) == (0, "ok\n")
        return
    assert validated == 2
    assert (
        v_err.splitlines()[0]
        == r_err.splitlines()[0]
        == f"kubesched: error: {path} is invalid"
        + (f" ({len(_problems(v_err))} problem{'s' if len(_problems(v_err)) != 1 else ''}):")
    )
    assert _problems(v_err) == _problems(r_err)


def test_the_kubernetes_version_selects_the_rules(
    cli: Callable[[Sequence[str]], int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kubesched.cli import scheduler_cmd

    path = tmp_path / "c.yaml"
    path.write_text(SCHED_HEAD + "profiles:\n- schedulerName: s\n  plugins:\n    placementScore: {}\n")
    assert cli(["config", "validate", str(path)]) == 0  # the reference, 1.37, has placementScore
    capsys.readouterr()
    assert cli(["config", "validate", "--kubernetes-version", "v1.35.4", str(path)]) == 2
    assert "placementScore: unknown field; placementScore is an extension point" in capsys.readouterr().err
    assert cli(["config", "validate", "--kubernetes-version", "1.30", str(path)]) == 2
    assert "--kubernetes-version: unsupported Kubernetes version '1.30'" in capsys.readouterr().err
    assert scheduler_cmd.config_release(argparse.Namespace(kubernetes_version="v1.35.4")).version == "1.35.4"
    assert scheduler_cmd.config_release(argparse.Namespace()) is REFERENCE
    with pytest.raises(CLIError, match=r"--kubernetes-version: unsupported Kubernetes version '1\.30'"):
        scheduler_cmd.config_release(argparse.Namespace(kubernetes_version="1.30"))
