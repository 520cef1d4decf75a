"""`kubesched scheduler run` reads its configuration once at start-up (issue 12: it was read and built 2-4 times)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import scheduler_cmd
from kubesched.cli.main import main
from kubesched.cli.scheduler_live import LiveOptions
from kubesched.config import check as config_check
from kubesched.config import profiles as config_profiles
from kubesched.framework import build as framework_build
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.profiles import manager

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "examples" / "cluster.yaml"
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}, qps: 7, burst: 9}}
leaderElection: {{leaderElect: false}}
profiles: [{{schedulerName: mine}}]
"""
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


class Counts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads = 0
        self.builds = 0
        read_file, build_profiles = config_profiles.read_file, framework_build.build_profiles

        def counted_read(*args: Any, **kwargs: Any) -> Any:
            self.reads += 1
            return read_file(*args, **kwargs)

        def counted_build(*args: Any, **kwargs: Any) -> Any:
            self.builds += 1
            return build_profiles(*args, **kwargs)

        monkeypatch.setattr(config_check, "read_file", counted_read)
        monkeypatch.setattr(manager, "build_profiles", counted_build)


def write_config(tmp_path: Path) -> Path:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    config = tmp_path / "sched.yaml"
    config.write_text(textwrap.dedent(CONFIG.format(kubeconfig=kubeconfig)))
    return config


def test_in_memory_reads_the_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = Counts(monkeypatch)
    assert main(["scheduler", "run", "--cluster", str(CLUSTER), "--config", str(write_config(tmp_path))]) == 0
    assert counts.reads == 1
    assert counts.builds == 1  # by the scheduler, with its own handles: a broken file is refused there too


def test_live_start_up_reads_once_and_hands_the_read_configuration_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = Counts(monkeypatch)
    seen: list[LiveOptions] = []

    async def serve(options: LiveOptions) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(scheduler_cmd, "serve", serve)
    assert main(["scheduler", "run", "--config", str(write_config(tmp_path))]) == 0
    (options,) = seen
    assert counts.reads == 1 and counts.builds == 0  # read once; built by the scheduler, once, when it starts
    # The client settings come from the configuration read at start-up (the file's kubeconfig was used).
    assert options.config is not None and (options.config.qps, options.config.burst) == (7, 9)
    assert options.connection.server == "https://127.0.0.1:1"
    # The scheduler's build uses what was read; a reload reads the file again.
    assert list(options.build(lambda name: Handle(scheduler_name=name)).profiles) == ["mine"]
    assert counts.reads == 1 and counts.builds == 1
    assert options.reload is not None
    options.reload(lambda name: Handle(scheduler_name=name))
    assert counts.reads == 2
