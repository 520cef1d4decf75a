"""--plugins-from image: the scheduler, extender and webhook load no code a configuration names by path, at start
and on a hot reload; the error names the field and the flag, and the file is never imported (docs/security.md)."""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

import pytest
import yaml

from kubesched.cli.main import build_parser, main
from kubesched.cli.scheduler_cmd import rereader
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.profiles.manager import Reloader

ROOT = Path(__file__).resolve().parents[3]
REFUSED = "refused by --plugins-from image"
PLUGIN = """\
open({marker!r}, "w").close()
from kubesched.framework.interfaces import FilterPlugin


class Gpu(FilterPlugin):
    name = "Gpu"

    def filter(self, state, pod, nodes):
        return None
"""


def free_port() -> int:
    """Never bound here: the refusal comes before the server starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def evil(directory: Path, name: str = "gpu.py") -> tuple[Path, Path]:
    """A plugin file that leaves a marker when imported."""
    marker = directory / f"{name}.ran"
    path = directory / name
    path.write_text(PLUGIN.format(marker=str(marker)))
    return path, marker


def scheduler_config(path: Path, modules: list[str]) -> Path:
    doc: dict[str, object] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "mine"}],
    }
    if modules:
        doc["pluginModules"] = modules
        doc["profiles"] = [{"schedulerName": "mine", "plugins": {"multiPoint": {"enabled": [{"name": "Gpu"}]}}}]
    path.write_text(yaml.safe_dump(doc))
    return path


def test_scheduler_refuses_a_plugin_file_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugin, marker = evil(tmp_path)
    config = scheduler_config(tmp_path / "sched.yaml", [f"{plugin}:Gpu"])
    argv = ["scheduler", "run", "--config", str(config), "--cluster", str(ROOT / "examples" / "cluster.yaml")]
    assert main([*argv, "--plugins-from", "image"]) == 2
    err = capsys.readouterr().err
    assert f"pluginModules[0]: {plugin}:Gpu: {plugin} is a file: {REFUSED}" in err and "Traceback" not in err
    assert not marker.exists()
    assert main(argv) == 0  # the default, files: loaded as before
    assert marker.exists()


def test_scheduler_refuses_a_plugin_file_on_hot_reload(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plugin, marker = evil(tmp_path)
    config = scheduler_config(tmp_path / "sched.yaml", [])
    args = build_parser().parse_args(["scheduler", "run", "--config", str(config), "--plugins-from", "image"])
    reread = rereader(config, True, args)  # what `scheduler run` reloads with (scheduler_live)
    applied: list[object] = [reread(Handle)]
    reloader = Reloader(config, lambda: reread(Handle), applied.append)
    # The ConfigMap is edited to load a file (its mounted copy changes): refused, the running one stays.
    scheduler_config(config, [f"{plugin}:Gpu"])
    os.utime(config, ns=(1, 10**18))
    with caplog.at_level(logging.ERROR, logger="kubesched.scheduler"):
        assert reloader.check() is False
    assert len(applied) == 1 and not marker.exists()
    assert f"pluginModules[0]: {plugin}:Gpu: {plugin} is a file: {REFUSED}" in caplog.text
    assert "keeping the running one" in caplog.text
    # Put back: applied, as any good change.
    scheduler_config(config, [])
    os.utime(config, ns=(2, 10**18))
    assert reloader.check() is True and len(applied) == 2


def test_extender_refuses_a_policy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy, marker = evil(tmp_path, "policy.py")
    argv = ["extender", "serve", "--policy", f"{policy}:policy", "--nodes", str(ROOT / "examples" / "nodes.yaml")]
    assert main([*argv, "--plugins-from", "image", "--listen", f"127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err
    assert f"{policy} is a file: {REFUSED}" in err and "Traceback" not in err
    assert not marker.exists()


def test_webhook_refuses_a_python_rule_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, marker = evil(tmp_path, "rules.py")
    config = tmp_path / "webhook.yaml"
    config.write_text("rules:\n- {name: team, python: rules.py:Gpu}\n")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    assert main(["certs", "--out", str(tmp_path), "--service", "w", "--namespace", "ns"]) == 0
    capsys.readouterr()
    argv = ["webhook", "serve", "--config", str(config), "--tls-cert", str(cert), "--tls-key", str(key)]
    assert main([*argv, "--plugins-from", "image", "--listen", f"127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err
    assert f"rules[0].python: rules.py:Gpu: rules.py is a file: {REFUSED}" in err and "Traceback" not in err
    assert not marker.exists()
