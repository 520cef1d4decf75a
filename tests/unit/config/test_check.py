"""The one validator: kube-scheduler's rules per release, plus kubesched's extensions (config/check.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.config.check import Verdict, validate_file, validate_text
from kubesched.scheduler.profiles.manager import PluginSource
from kubesched.versions import parse_release

PLUGINS = PluginSource(entry_points=lambda: ())
HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def verdict(doc: dict[str, Any], version: str = "1.37", base: Path | None = None) -> Verdict:
    return validate_text(
        yaml.safe_dump({**HEAD, **doc}, sort_keys=False), PLUGINS, release=parse_release(version), base=base
    )


def errors(doc: dict[str, Any], version: str = "1.37") -> list[str]:
    return [str(e) for e in verdict(doc, version).errors]


def profile(**fields: Any) -> dict[str, Any]:
    return {"profiles": [{"schedulerName": "s", **fields}]}


def args(name: str, value: dict[str, Any]) -> dict[str, Any]:
    return profile(pluginConfig=[{"name": name, "args": value}])


# ---- the three files of the issue: each was "ok" for `config validate` before -----------------------


def test_an_unknown_field_is_a_strict_decoding_error() -> None:
    doc = profile(plugins={"score": {"enabled": [{"name": "NodeResourcesFit", "wieght": 3}]}})
    assert errors(doc) == ["profiles[0].plugins.score.enabled[0].wieght: unknown field; did you mean 'weight'?"]


def test_an_unknown_plugin_does_not_exist() -> None:
    doc = profile(plugins={"filter": {"enabled": [{"name": "NodeResourceFit"}]}})
    assert errors(doc) == [
        'profiles[0].plugins.filter.enabled[0].name: plugin "NodeResourceFit" does not exist;'
        ' did you mean "NodeResourcesFit"?'
    ]


def test_a_misspelt_scoring_strategy_is_unsupported() -> None:
    doc = profile(
        pluginConfig=[
            {"name": "PrioritySort", "args": None},
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAlocated"}}},
        ]
    )
    assert errors(doc) == [
        'profiles[0].pluginConfig[1].args.scoringStrategy.type: Unsupported value: "MostAlocated": supported values:'
        ' "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
    ]


# ---- our extension: pluginModules -------------------------------------------------------------------

PLUGIN_FILE = """
from kubesched import plugin

class Mine(plugin.FilterPlugin):
    name = "Mine"

    def filter(self, state, pod, nodes):
        return None
"""


def test_plugin_modules_are_accepted_and_their_plugins_are_known(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(PLUGIN_FILE)
    doc = {"pluginModules": ["mine.py:Mine"], **profile(plugins={"filter": {"enabled": [{"name": "Mine"}]}})}
    result = verdict(doc, base=tmp_path)
    assert result.ok, result


def test_a_plugin_module_that_does_not_load_is_named_by_its_field_path(tmp_path: Path) -> None:
    doc = {"pluginModules": ["missing.py:Mine"], **profile(plugins={"filter": {"enabled": [{"name": "Mine"}]}})}
    found = [str(e) for e in verdict(doc, base=tmp_path).errors]
    assert found[0].startswith(f"pluginModules[0]: {tmp_path / 'missing.py'}:Mine: cannot load:")
    # Its plugin is then unknown too: both said at once.
    assert found[1] == 'profiles[0].plugins.filter.enabled[0].name: plugin "Mine" does not exist'
    assert [str(e) for e in verdict({"pluginModules": "x"}).errors] == [
        'pluginModules: must be a list of "pkg.mod:Class" or "path/to/file.py:Class"'
    ]


# ---- profiles ---------------------------------------------------------------------------------------


def test_profile_rules() -> None:
    doc = {
        "profiles": [
            {"schedulerName": "a", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}},
            {"schedulerName": "a"},
            {"schedulerName": "", "percentageOfNodesToScore": 101},
        ]
    }
    assert errors(doc) == [
        'profiles[1].schedulerName: Duplicate value: "a"',
        "profiles[2].schedulerName: Required value",
        "profiles[2].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        "profiles[1].plugins.queueSort: Invalid value: queueSort must be the same for all profiles",
        "profiles[2].plugins.queueSort: Invalid value: queueSort must be the same for all profiles",
    ]


def test_a_plugin_enabled_twice_at_one_point() -> None:
    doc = profile(plugins={"filter": {"enabled": [{"name": "NodeName"}, {"name": "NodeName"}]}})
    assert errors(doc) == [
        'profiles[0].plugins.filter.enabled[1].name: plugin "NodeName" already registered as "FilterPlugin"'
    ]


def test_plugin_config_duplicates_and_removed_plugins() -> None:
    doc = profile(
        plugins={"filter": {"enabled": [{"name": "EBSLimits"}]}},
        pluginConfig=[{"name": "NodeAffinity", "args": {}}, {"name": "NodeAffinity", "args": {}}],
    )
    removed = 'was invalid in version "v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")'
    assert errors(doc) == [
        f'profiles[0].plugins.filter.enabled[0]: Invalid value: "EBSLimits": {removed}',
        'profiles[0].pluginConfig[1]: Duplicate value: "NodeAffinity"',
    ]


def test_args_for_a_plugin_nobody_knows_are_a_warning_as_kube_scheduler_ignores_them() -> None:
    result = verdict(profile(pluginConfig=[{"name": "NodeResourceFit", "args": {"x": 1}}]))
    assert result.ok
    assert [str(w) for w in result.warnings] == [
        "profiles[0].pluginConfig[0]: names no known plugin; did you mean 'NodeResourcesFit'?:"
        " kube-scheduler ignores these args"
    ]


def test_a_kube_scheduler_plugin_kubesched_lacks_is_valid_but_unrunnable() -> None:
    result = verdict(profile(plugins={"permit": {"enabled": [{"name": "GangScheduling"}]}}))
    assert not result.errors
    assert [e.path for e in result.unrunnable] == ["profiles[0].plugins.permit.enabled[0].name"]
    assert "kubesched does not implement" in result.unrunnable[0].message
    assert not result.ok


def test_a_plugins_own_args_check_runs_when_kube_schedulers_rules_pass() -> None:
    # kube-scheduler 1.35's rules let this through, and its plugin then dereferences the missing shape: kubesched's
    # plugin refuses it when the profile is built, at the entry's path.
    doc = args("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}})
    assert errors(doc, "1.35") == [
        "profiles[0].pluginConfig[0].args: scoringStrategy.requestedToCapacityRatio: Required value:"
        " needed by type RequestedToCapacityRatio"
    ]


# ---- versions ---------------------------------------------------------------------------------------


def test_extension_points_of_1_37_are_unknown_fields_for_1_35() -> None:
    doc = profile(plugins={"placementScore": {"enabled": [{"name": "PodGroupPodsCount", "weight": 1}]}})
    assert errors(doc, "1.35") == [
        "profiles[0].plugins.placementScore: unknown field; placementScore is an extension point of"
        " kube-scheduler 1.37, not of 1.35"
    ]
    result = verdict(doc, "1.37")
    assert not result.errors
    assert [e.path for e in result.unrunnable] == ["profiles[0].plugins.placementScore.enabled[0].name"]


def test_requested_to_capacity_ratio_rules_differ_between_releases() -> None:
    doc = args("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}})
    assert errors(doc, "1.37") == [
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio: Required value:"
        " must be specified when type is RequestedToCapacityRatio"
    ]
    shape = {"shape": [{"utilization": 0, "score": 10}]}
    doc = args("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": shape}})
    assert errors(doc, "1.35") == []
    assert errors(doc, "1.37") == [
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio: Forbidden:"
        " must be nil when type is not RequestedToCapacityRatio"
    ]


def test_volume_binding_shape_needs_storage_capacity_scoring_on_1_35() -> None:
    doc = args("VolumeBinding", {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]})
    # 1.37 accepts it; kubesched's plugin does not score by storage capacity and says so when it builds: valid, but
    # not runnable by kubesched (as a plugin kubesched lacks).
    got = verdict(doc, "1.37")
    assert not got.errors and not got.ok
    assert [str(e) for e in got.unrunnable] == [
        "profiles[0].pluginConfig[0].args: shape: kubesched does not implement StorageCapacityScoring (scoring"
        " nodes by their free storage capacity): remove `shape`"
    ]
    assert errors(doc, "1.35") == [
        'profiles[0].pluginConfig[0].args.shape: Invalid value: [{"utilization": 0, "score": 10},'
        ' {"utilization": 100, "score": 0}]: unexpected field `shape`, remove it or turn on the feature gate'
        " StorageCapacityScoring"
    ]


def test_an_unsupported_version_is_refused_where_the_release_is_chosen() -> None:
    """The validator takes a `versions.Release`: the one table, whose parser names the supported releases."""
    with pytest.raises(
        ValueError, match=r"unsupported Kubernetes version '1.30': supported are 1.35 \(v1.35.4\), 1.37"
    ):
        verdict({}, "1.30")


# ---- the file path, and the default one ---------------------------------------------------------------


def test_validate_file_reads_and_checks(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            apiVersion: kubescheduler.config.k8s.io/v1
            kind: KubeSchedulerConfiguration
            parallelism: 0
            """
        )
    )
    result = validate_file(path, PLUGINS)
    assert [str(e) for e in result.errors] == [
        "parallelism: Invalid value: 0: should be an integer value greater than zero"
    ]
    assert validate_file(tmp_path / "none.yaml", PLUGINS).config is None


# ---- hostile input: a wrong type anywhere is a field error, never a traceback -------------------------

RICH: dict[str, Any] = {
    "parallelism": 8,
    "percentageOfNodesToScore": 50,
    "leaderElection": {"leaderElect": False, "leaseDuration": "15s"},
    "clientConnection": {"qps": 5, "burst": 10},
    "extenders": [{"urlPrefix": "http://e:8888", "filterVerb": "filter", "managedResources": [{"name": "x.io/g"}]}],
    "profiles": [
        {
            "schedulerName": "s",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}], "disabled": [{"name": "*"}]},
                "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                "bind": {"enabled": [{"name": "DefaultBinder"}]},
            },
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}},
                },
                {
                    "name": "PodTopologySpread",
                    "args": {
                        "defaultingType": "List",
                        "defaultConstraints": [
                            {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
                        ],
                    },
                },
            ],
        }
    ],
}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _replaced(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    if isinstance(doc, dict):
        return {k: _replaced(v, path[1:], new) if k == path[0] else v for k, v in doc.items()}
    return [_replaced(v, path[1:], new) if i == path[0] else v for i, v in enumerate(doc)]


def test_the_rich_document_is_valid() -> None:
    assert verdict(RICH).ok, verdict(RICH)


@pytest.mark.parametrize("wrong", [7, "x", [1], {"zz": 1}, True, -1.5])
def test_a_wrong_value_at_every_path_is_reported_with_a_path(wrong: Any) -> None:
    for path in _paths(RICH):
        result = verdict(_replaced(RICH, path, wrong))  # must not raise
        for e in (*result.errors, *result.unrunnable):
            assert e.path and e.message, (path, e)
        if isinstance(wrong, dict):  # an object where none belongs, or with an unknown field
            assert result.errors, path


def test_what_kube_scheduler_accepts_is_accepted() -> None:
    # Each of these was refused before: zero qps/burst mean kube-scheduler's defaults, a weight outside score is
    # ignored, a pluginConfig entry without a name is ignored (we warn).
    assert verdict({"clientConnection": {"qps": 0, "burst": 0}}).ok
    assert verdict(profile(plugins={"filter": {"enabled": [{"name": "NodeName", "weight": 3}]}})).ok
    nameless = verdict(profile(pluginConfig=[{"args": {"x": 1}}]))
    assert nameless.ok
    assert [str(w) for w in nameless.warnings] == [
        "profiles[0].pluginConfig[0]: has no name: kube-scheduler ignores these args"
    ]
    assert errors({"clientConnection": {"burst": -1}}) == [
        "clientConnection.burst: Invalid value: -1: must be non-negative"
    ]
