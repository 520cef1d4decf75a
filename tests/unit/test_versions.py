"""The supported Kubernetes releases: selecting one by name or by the API server's /version."""

from __future__ import annotations

import pytest

from kubesched.versions import KUBERNETES_VERSION, REFERENCE, RELEASES, SUPPORTED, for_server, parse_release


def test_the_reference_is_v1_37_2_and_v1_35_4_stays_supported() -> None:
    assert KUBERNETES_VERSION == REFERENCE.version == "1.37.2"
    assert SUPPORTED == ("1.35.4", "1.37.2")
    assert REFERENCE.kube_scheduler_image == "registry.k8s.io/kube-scheduler:v1.37.2"


@pytest.mark.parametrize(
    ("text", "version"),
    [("1.37", "1.37.2"), ("1.37.2", "1.37.2"), ("v1.37.2", "1.37.2"), ("v1.35.4", "1.35.4"), ("1.35", "1.35.4")],
)
def test_parse_release_takes_a_minor_or_the_supported_patch(text: str, version: str) -> None:
    assert parse_release(text).version == version


@pytest.mark.parametrize("text", ["1.36", "1.35.3", "1.37.0", "2.0", "latest", "", "v1", "1.37.2.1", "1.37-rc"])
def test_parse_release_refuses_others_naming_the_supported_ones(text: str) -> None:
    with pytest.raises(
        ValueError, match=r"unsupported Kubernetes version .*: supported are 1\.35 \(v1\.35\.4\), 1\.37"
    ):
        parse_release(text)


@pytest.mark.parametrize(
    ("major", "minor", "version", "warned"),
    [
        ("1", "37", "1.37.2", False),
        ("1", "35", "1.35.4", False),
        ("1", "37+", "1.37.2", False),  # some distributions add a suffix
        ("1", "36", "1.37.2", True),  # equally near: the newer one
        ("1", "34", "1.35.4", True),
        ("1", "30", "1.35.4", True),
        ("1", "40", "1.37.2", True),
        ("x", "y", "1.37.2", True),
    ],
)
def test_for_server_follows_the_nearest_supported_release(major: str, minor: str, version: str, warned: bool) -> None:
    release, warning = for_server(major, minor)
    assert release.version == version
    assert (warning is not None) == warned
    if warning is not None:
        assert f"v{version}" in warning


def test_the_table_differs_where_upstream_does() -> None:
    """pkg/scheduler/apis/config/v1/default_plugins.go and noderesources/balanced_allocation.go of each."""
    old, new = RELEASES
    names_old = [n for n, _ in old.default_plugins]
    names_new = [n for n, _ in new.default_plugins]
    assert names_old.index("NodeUnschedulable") < names_old.index("NodeName")
    assert names_new.index("NodeName") < names_new.index("NodeUnschedulable")
    assert names_new[-1] == "NodeDeclaredFeatures" and "NodeDeclaredFeatures" not in names_old
    assert sorted(old.default_plugins) == sorted(p for p in new.default_plugins if p[0] != "NodeDeclaredFeatures")
    assert not old.balanced_allocation_scores_improvement and new.balanced_allocation_scores_improvement
    assert set(new.extension_points) - set(old.extension_points) == {
        "placementGenerate",
        "placementScore",
        "podGroupPostFilter",
    }
    # What a configuration may say (config/check.py, config/pluginargs.py read these; there is no other table).
    assert new.in_tree_plugins - old.in_tree_plugins == {
        "DeferredPodScheduling",
        "TopologyPlacementGenerator",
        "PodGroupPodsCount",
    }
    assert {n for n, _ in new.default_plugins} <= new.in_tree_plugins
    assert "multiPoint" in old.extension_points and "multiPoint" in new.extension_points
    gates = ("storage_capacity_scoring", "dra_binding_timeout", "fit_strategy_shape_rules")
    assert [getattr(old, g) for g in gates] == [False] * 3 and [getattr(new, g) for g in gates] == [True] * 3
