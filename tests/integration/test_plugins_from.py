"""`scheduler run --plugins-from image` against the real kube-apiserver: a configuration (its ConfigMap's mounted
file) edited while running to load a plugin file is refused before the file is imported, the refusal is logged and
counted, and the running configuration keeps binding pods (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.waiting import wait_until
from tests.integration.test_scheduler_e2e import Run, create, node_of, nodes, pod, running

pytestmark = [pytest.mark.controlplane]

PLUGIN = """\
open({marker!r}, "w").close()
from kubesched.framework.interfaces import FilterPlugin


class Gpu(FilterPlugin):
    name = "Gpu"

    def filter(self, state, pod, nodes):
        return None
"""


def test_a_plugin_file_named_on_hot_reload_is_refused_in_image_mode(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, run, ns = control_plane, Run(), kube_namespace
    marker = tmp_path / "imported"
    plugin = tmp_path / "gpu.py"
    plugin.write_text(PLUGIN.format(marker=str(marker)))
    with (
        nodes(cp, run, {"a": {}}),
        running(cp, tmp_path, run.config(), args=("--plugins-from", "image")) as sched,
    ):
        create(cp, ns, pod("before", run.scheduler))
        assert wait_until(lambda: node_of(cp, ns, "before"), "bound by the first configuration") == run.node("a")
        profile = {"schedulerName": run.scheduler, "plugins": {"multiPoint": {"enabled": [{"name": "Gpu"}]}}}
        sched.config.write_text(
            yaml.safe_dump(run.config(profiles=[profile], extra={"pluginModules": [f"{plugin}:Gpu"]}))
        )
        wait_until(lambda: sched.metric("kubesched_scheduler_config_reloads_total", result="refused") >= 1, "refusal")
        log = sched.tail()
        assert f"pluginModules[0]: {plugin}:Gpu: {plugin} is a file: refused by --plugins-from image" in log
        assert not marker.exists()  # never imported
        create(cp, ns, pod("after", run.scheduler))
        assert wait_until(lambda: node_of(cp, ns, "after"), "bound by the running configuration") == run.node("a")
        assert sched.metric("kubesched_scheduler_config_reloads_total", result="applied") == 0
