"""`kubesched manifests` runs no user code unless asked (--load-plugins), and renders --plugins-from image unless
plugin files ship in a ConfigMap, where it says who may then run code (docs/security.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main

PLUGIN = """\
open({marker!r}, "w").close()
from kubesched.framework.interfaces import FilterPlugin
from kubesched import plugin


class Gpu(FilterPlugin):
    name = "Gpu"

    def filter(self, state, pod, nodes):
        return None


def check(pod, request):
    return None


policy = plugin.Policy(
    name="gpu", profile=plugin.ProfileSpec(plugins=(plugin.PluginRef("Gpu"),)), plugins=(Gpu,)
)
"""


KIND = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def evil(directory: Path, name: str) -> tuple[Path, Path]:
    marker = directory / f"{name}.ran"
    (directory / name).write_text(PLUGIN.format(marker=str(marker)))
    return directory / name, marker


def args_of(objects: list[dict[str, Any]], name: str) -> list[str]:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == name]
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def render(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[dict[str, Any]], str]:
    assert main(["manifests", *argv]) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    return list(yaml.safe_load_all(out)), err


def test_by_default_every_deployment_loads_plugins_from_the_image(capsys: pytest.CaptureFixture[str]) -> None:
    objects, err = render(capsys, "all", "--generate-certs")
    for name in ("kubesched-scheduler", "kubesched-extender", "kubesched-webhook"):
        args = args_of(objects, name)
        assert args[args.index("--plugins-from") + 1] == "image", name
    assert "holds Python code" not in err


def test_scheduler_plugin_files_are_not_imported_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin, marker = evil(tmp_path, "gpu.py")
    config = tmp_path / "sched.yaml"
    profile = {"schedulerName": "gpu", "plugins": {"multiPoint": {"enabled": [{"name": "Gpu"}]}}}
    config.write_text(yaml.safe_dump({**KIND, "pluginModules": ["gpu.py:Gpu"], "profiles": [profile]}))
    argv = ["scheduler", "--config", str(config), "--plugin-module", str(plugin)]
    objects, err = render(capsys, *argv)
    assert not marker.exists()
    assert "pluginModules not imported" in err and "--load-plugins" in err
    assert "ConfigMap kubesched/kubesched-scheduler-plugins holds Python code run as ServiceAccount" in err
    args = args_of(objects, "kubesched-scheduler")
    assert args[args.index("--plugins-from") + 1] == "files"
    # Asked: imported and checked here (its code runs on this machine), the same objects.
    again, err = render(capsys, *argv, "--load-plugins")
    assert marker.exists() and again == objects and "pluginModules not imported" not in err


def test_without_import_a_misspelt_plugin_is_left_to_the_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "sched.yaml"
    profile = {"schedulerName": "gpu", "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}
    config.write_text(yaml.safe_dump({**KIND, "pluginModules": ["some_pkg.mod:Nope"], "profiles": [profile]}))
    render(capsys, "scheduler", "--config", str(config))  # it may come from the module: not refused
    assert main(["manifests", "scheduler", "--config", str(config), "--load-plugins"]) == 2
    assert "pluginModules[0]: some_pkg.mod:Nope: cannot load" in capsys.readouterr().err
    config.write_text(yaml.safe_dump({**KIND, "profiles": [profile]}))  # no pluginModules: a name nothing can define
    assert main(["manifests", "scheduler", "--config", str(config)]) == 2
    assert 'plugin "Nope" does not exist' in capsys.readouterr().err


def test_python_rules_are_not_imported_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, marker = evil(tmp_path, "rules.py")
    config = tmp_path / "webhook.yaml"
    config.write_text("rules:\n- {name: team, python: rules.py:check}\n")
    argv = ["webhook", "--generate-certs", "--webhook-config", str(config)]
    objects, err = render(capsys, *argv)
    assert not marker.exists() and "python rules not imported (team)" in err
    args = args_of(objects, "kubesched-webhook")
    assert args[args.index("--plugins-from") + 1] == "files"
    render(capsys, *argv, "--load-plugins")
    assert marker.exists()
    config.write_text("rules:\n- {name: team, python: missing.py:check}\n")
    assert main(["manifests", *argv]) == 2  # what needs no import is still checked
    assert "no such file" in capsys.readouterr().err


def test_a_policy_file_needs_load_plugins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy, marker = evil(tmp_path, "policy.py")
    assert main(["manifests", "extender", "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert f"--policy {policy}: rendering a policy that is not built in imports it" in err and "--load-plugins" in err
    assert not marker.exists()
    objects, err = render(capsys, "extender", "--policy", str(policy), "--load-plugins")
    assert marker.exists() and "kubesched-extender-policy holds Python code" in err
    args = args_of(objects, "kubesched-extender")
    assert args[args.index("--plugins-from") + 1] == "files"
