"""`kubesched manifests scheduler --config FILE --plugin-module FILE.py`: the user's config and plugins, deployed."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.config.profiles import parse

PLUGIN = textwrap.dedent(
    """
    from kubesched.framework.interfaces import FilterPlugin


    class GpuModel(FilterPlugin):
        name = "GpuModel"

        def filter(self, state, pod, nodes):
            raise NotImplementedError
    """
)


def write_config(directory: Path, **extra: Any) -> Path:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "pluginModules": ["plugins/gpu.py:GpuModel"],
        "profiles": [
            {
                "schedulerName": "gpu",
                "plugins": {"multiPoint": {"enabled": [{"name": "GpuModel"}]}},
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
            }
        ],
        **extra,
    }
    (directory / "plugins").mkdir(exist_ok=True)
    (directory / "plugins" / "gpu.py").write_text(PLUGIN)
    path = directory / "sched.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def render(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["manifests", *argv]) == 0, capsys.readouterr().err
    return list(yaml.safe_load_all(capsys.readouterr().out))


def error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["manifests", *argv]) == 2
    return capsys.readouterr().err


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


def test_the_users_config_and_plugin_are_deployed_and_mounted_where_the_config_loads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    objects = render(capsys, "scheduler", "--config", str(config), "--plugin-module", str(tmp_path / "plugins/gpu.py"))
    deployed = yaml.safe_load(find(objects, "ConfigMap", "kubesched-scheduler")["data"]["config.yaml"])
    assert deployed["pluginModules"] == ["/etc/kubesched/plugins/gpu.py:GpuModel"]
    assert deployed["profiles"][0]["pluginConfig"][0]["args"] == {"scoringStrategy": {"type": "MostAllocated"}}
    assert deployed["leaderElection"] == {
        "leaderElect": True,
        "resourceName": "kubesched-scheduler",
        "resourceNamespace": "kubesched",
    }
    assert find(objects, "ConfigMap", "kubesched-scheduler-plugins")["data"] == {"gpu.py": PLUGIN}
    pod = find(objects, "Deployment", "kubesched-scheduler")["spec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["plugins"] == "/etc/kubesched/plugins"
    assert volumes["plugins"]["configMap"] == {"name": "kubesched-scheduler-plugins"}
    # The deployed document is one `scheduler run` accepts: parsed back with the scheduler's own reader.
    assert parse(deployed).plugin_modules == ("/etc/kubesched/plugins/gpu.py:GpuModel",)


def test_all_mode_webhook_rules_watch_the_configs_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    plugin = str(tmp_path / "plugins/gpu.py")
    objects = render(capsys, "all", "--config", str(config), "--plugin-module", plugin, "--generate-certs")
    rules = yaml.safe_load(find(objects, "ConfigMap", "kubesched-webhook-config")["data"]["config.yaml"])
    assert rules["rules"][0]["feasibility"]["schedulerNames"] == ["gpu", "kubesched-extender-scheduler"]


def test_a_config_without_profiles_takes_the_scheduler_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    objects = render(capsys, "scheduler", "--config", str(config), "--scheduler-name", "mine")
    deployed = yaml.safe_load(find(objects, "ConfigMap", "kubesched-scheduler")["data"]["config.yaml"])
    assert deployed["profiles"] == [{"schedulerName": "mine"}]
    assert not [o for o in objects if o["metadata"]["name"] == "kubesched-scheduler-plugins"]


def test_another_lease_is_replaced_by_the_granted_one_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, leaderElection={"leaderElect": True, "resourceNamespace": "kube-system"})
    assert (
        main(["manifests", "scheduler", "--config", str(config), "--plugin-module", str(tmp_path / "plugins/gpu.py")])
        == 0
    )
    out, err = capsys.readouterr()
    assert "leaderElection.resourceNamespace 'kube-system' is deployed as 'kubesched'" in err
    assert "resourceNamespace: kubesched" in out


@pytest.mark.parametrize(
    ("change", "argv", "message"),
    [
        ({}, [], "pluginModules[0]: plugins/gpu.py is a file: ship it with --plugin-module"),
        ({}, ["P", "--plugin-module", "other.py"], "--plugin-module other.py: not named by the pluginModules"),
        ({}, ["--plugin-module", "sched.yaml"], "--plugin-module sched.yaml: expected a Python file"),
        ({}, ["--plugin-module", "missing.py"], "--plugin-module: no such file missing.py"),
        (
            {"profiles": [{"schedulerName": "x", "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]},
            ["P"],
            'profiles[0].plugins.filter.enabled[0].name: plugin "Nope" does not exist',
        ),
        (
            {"profiles": [{"schedulerName": "x", "pluginConfig": [{"name": "NodeResourcesFit", "args": 3}]}]},
            ["P"],
            "profiles[0].pluginConfig[0].args: must be an object",
        ),
        ({"pluginModules": [7]}, [], 'pluginModules: must be a list of "pkg.mod:Class"'),
        (
            {"profiles": [{"schedulerName": "default-scheduler"}]},
            ["P"],
            "profiles[0].schedulerName: 'default-scheduler' is the cluster's own kube-scheduler's",
        ),
        (
            {"leaderElection": {"leaderElect": True, "resourceLock": "endpoints"}},
            ["P"],
            'leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must be "leases"',
        ),
    ],
)
def test_bad_configs_and_plugin_files_are_refused_with_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    change: dict[str, Any],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, **change)
    (tmp_path / "other.py").write_text(PLUGIN)
    argv = [a if a != "P" else "--plugin-module=plugins/gpu.py" for a in argv]
    err = error(capsys, "scheduler", "--config", str(config), "--load-plugins", *argv)
    assert message in err and "Traceback" not in err


def test_hostile_config_files_end_in_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("[1, 2", "- a list\n", "\x00\x01", "kind: KubeSchedulerConfiguration\nprofiles: 3\n"):
        path = tmp_path / "bad.yaml"
        path.write_text(text)
        err = error(capsys, "scheduler", "--config", str(path))
        assert err.startswith("kubesched: error:") and "Traceback" not in err
    assert "--config: no such file" in error(capsys, "scheduler", "--config", str(tmp_path / "none.yaml"))
    assert "--config: does not apply to mode webhook" in error(capsys, "webhook", "--config", "x", "--generate-certs")
    assert "--plugin-module: give --config FILE" in error(capsys, "scheduler", "--plugin-module", "x.py")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def broken(:\n", "pluginModules[0]: "),
        ("raise RuntimeError('boom at import')\n", "boom at import"),
        ("x = 1\n", "pluginModules[0]: "),
        (b"\xff\xfe\x00garbage", "pluginModules[0]: "),
    ],
)
def test_hostile_plugin_files_end_in_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str | bytes, message: str
) -> None:
    config = write_config(tmp_path)
    plugin = tmp_path / "plugins" / "gpu.py"
    if isinstance(source, bytes):
        plugin.write_bytes(source)
    else:
        plugin.write_text(source)
    err = error(capsys, "scheduler", "--config", str(config), "--plugin-module", str(plugin), "--load-plugins")
    assert err.startswith("kubesched: error:") and message in err and "Traceback" not in err
