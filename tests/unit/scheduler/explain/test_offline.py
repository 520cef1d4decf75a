"""`explain_file`: a cluster file and a configuration file in, an explanation out (what the fixtures call)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.cluster.files import ClusterFileError
from kubesched.errors import ConfigurationError
from kubesched.scheduler.explain.offline import explain_file

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def test_a_users_plugins_load_from_the_configuration() -> None:
    ex = explain_file(EXAMPLES / "gpu-cluster.yaml", "ml/infer-0", config=EXAMPLES / "gpu-scheduler-config.yaml")
    assert ex.node == "h100" and ex.kubernetes_version == "v1.37.2"
    assert any(s.plugin == "MostFreeGpus" and s.weight == 10 for n in ex.nodes for s in n.scores)


def test_the_release_is_chosen_by_name() -> None:
    ex = explain_file(EXAMPLES / "cluster.yaml", "shop/web-0", kubernetes_version="1.35")
    assert ex.kubernetes_version == "v1.35.4" and ex.node is not None


def test_a_bad_configuration_names_its_field(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: x, plugins: {score: {enabled: [{name: NoSuchPlugin}]}}}]\n"
    )
    with pytest.raises(ConfigurationError, match="NoSuchPlugin"):
        explain_file(EXAMPLES / "cluster.yaml", "shop/web-0", config=bad)
    with pytest.raises(ClusterFileError):
        explain_file(tmp_path / "missing.yaml", "shop/web-0")
