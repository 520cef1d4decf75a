"""KubeSchedulerConfiguration for the scheduler: shape, defaults, and every problem listed with its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.config.profiles import LeaderElectionConfig, load_file, parse
from kubesched.errors import ConfigurationError
from kubesched.framework.profile import PluginRef, PluginSet

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigurationError) as err:
        parse({**HEAD, **doc})
    return [str(e) for e in err.value.errors]


def test_defaults_are_kube_schedulers_with_a_lease_of_our_own() -> None:
    config = parse(dict(HEAD))
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    assert config.percentage_of_nodes_to_score == 0
    assert config.leader_election == LeaderElectionConfig(True, 15.0, 10.0, 2.0, "kubesched-scheduler", "kube-system")
    assert (config.qps, config.burst) == (50.0, 100)


def test_a_full_configuration_is_read() -> None:
    config = parse(
        {
            **HEAD,
            "percentageOfNodesToScore": 30,
            "podInitialBackoffSeconds": 2,
            "podMaxBackoffSeconds": 20,
            "clientConnection": {"qps": 5000, "burst": 5000},
            "leaderElection": {
                "leaderElect": True,
                "leaseDuration": "30s",
                "renewDeadline": "20s",
                "resourceName": "x",
            },
            "pluginModules": ["plugins/gpu.py:GpuFit", "my.pkg:Plugin"],
            "profiles": [
                {
                    "schedulerName": "fast",
                    "percentageOfNodesToScore": 10,
                    "plugins": {
                        "multiPoint": {"enabled": [{"name": "GpuFit", "weight": 5}], "disabled": [{"name": "*"}]},
                        "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
                    },
                    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/x"]}}],
                }
            ],
        },
        base=Path("/etc/kubesched"),
    )
    profile = config.profiles[0]
    assert profile.scheduler_name == "fast" and profile.percentage_of_nodes_to_score == 10
    assert profile.plugins["multiPoint"] == PluginSet((PluginRef("GpuFit", 5),), ("*",))
    assert profile.plugins["score"] == PluginSet((), ("NodeResourcesBalancedAllocation",))
    assert profile.plugin_config == {"NodeResourcesFit": {"ignoredResources": ["example.com/x"]}}
    assert config.plugin_modules == ("/etc/kubesched/plugins/gpu.py:GpuFit", "my.pkg:Plugin")
    assert (config.qps, config.burst, config.percentage_of_nodes_to_score) == (5000.0, 5000, 30)
    assert config.leader_election.lease_duration == 30 and config.leader_election.resource_name == "x"


def test_every_problem_is_listed_at_once_with_its_field_path() -> None:
    found = problems(
        {
            "percentageOfNodesToScore": 101,
            "podInitialBackoffSeconds": 0,
            "unknownTop": 1,
            "clientConnection": {"qps": -1},
            "leaderElection": {"leaseDuration": "5s", "renewDeadline": "10s"},
            "extenders": [{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": 0}],
            "profiles": [
                {
                    "schedulerName": "a",
                    "plugins": {
                        "fliter": {},
                        "filter": {"enabled": [{"name": "X", "weight": 2}], "extra": 1},
                        "score": {"enabled": [{"nam": "Y"}, {"name": "Z", "weight": -1}]},
                    },
                    "pluginConfig": [{"name": "A", "args": {}}, {"name": "A"}, {"args": {}}],
                },
                {"schedulerName": "a"},
            ],
        }
    )
    expected = [
        "unknownTop: unknown field",
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
        "extenders[0].weight: Invalid value: 0: must have a positive weight",
        'profiles[1].schedulerName: Duplicate value: "a"',
        "profiles[0].plugins.fliter: unknown field; did you mean 'filter'?",
        "profiles[0].plugins.filter.extra: unknown field",
        "profiles[0].plugins.score.enabled[0].nam: unknown field",
        "profiles[0].plugins.score.enabled[0].name: is required",
        "profiles[0].plugins.score.enabled[1].weight: must not be negative",
        'profiles[0].pluginConfig[1]: Duplicate value: "A"',
        "clientConnection.qps: must be positive",
        "leaderElection.leaseDuration: must be greater than renewDeadline",
    ]
    for want in expected:
        assert any(p.startswith(want) for p in found), f"missing {want!r} in {found}"


def test_a_legacy_policy_or_bad_plugin_modules_are_refused() -> None:
    assert any("legacy Policy" in p for p in problems({"kind": "Policy", "apiVersion": "v1"}))
    assert problems({"pluginModules": ["no-colon"]}) == [
        'pluginModules[0]: \'no-colon\': expected "pkg.mod:Class" or "file.py:Class"'
    ]


def test_load_file_reports_syntax_and_missing_files(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("kind: [")
    with pytest.raises(ConfigurationError, match="not valid YAML"):
        load_file(bad)
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_file(tmp_path / "missing.yaml")
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({**HEAD, "profiles": [{"schedulerName": "mine"}]}))
    assert load_file(good).profiles[0].scheduler_name == "mine"
