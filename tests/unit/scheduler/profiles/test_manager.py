"""Plugin sources (built-in, entry points, module paths), profile expansion, and reloading while running."""

from __future__ import annotations

import importlib.metadata
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.config.profiles import parse
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.profiles.manager import (
    Built,
    Reloader,
    build,
    build_from_file,
    describe,
    load_registry,
    module_files,
)
from kubesched.versions import parse_release

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
PLUGIN_SOURCE = """
from typing import ClassVar
import numpy as np
from kubesched.framework.interfaces import ScorePlugin

class {cls}(ScorePlugin):
    name: ClassVar[str] = "{name}"

    def score(self, state, pod, nodes):
        return np.full(len(nodes), {score}, dtype=np.int64)
"""


def write_plugin(path: Path, name: str = "Constant", score: int = 7, cls: str = "Constant") -> Path:
    path.write_text(textwrap.dedent(PLUGIN_SOURCE.format(cls=cls, name=name, score=score)))
    return path


def no_entry_points() -> list[importlib.metadata.EntryPoint]:
    return []


def built_from(doc: dict[str, Any], tmp_path: Path | None = None) -> Built:
    config = parse({**HEAD, **doc}, base=tmp_path)
    registry, errors = load_registry(config.plugin_modules, no_entry_points)
    return build(config, registry, Handle, errors)


def points(built: Built, profile: str = "default-scheduler") -> dict[str, tuple[str, ...]]:
    return {k: v for k, v in built.profiles[profile].points.items() if v}


@pytest.mark.parametrize(("version", "first"), [("1.35", "NodeUnschedulable"), ("1.37", "NodeName")])
def test_the_default_profile_is_upstreams_list_limited_to_existing_plugins(
    version: str, first: str, tmp_path: Path
) -> None:
    config = parse(HEAD, base=tmp_path)
    registry, errors = load_registry(config.plugin_modules, no_entry_points)
    release = parse_release(version)
    built = build(config, registry, Handle, errors, release)
    fw = built.profiles["default-scheduler"].framework
    second = ({"NodeName", "NodeUnschedulable"} - {first}).pop()
    assert [p.name for p in fw.filter][:4] == [first, second, "TaintToleration", "NodeAffinity"]
    # Every plugin was built with the release's semantics.
    assert all(p.handle.release is release for p in fw.plugins)
    weights = {p.name: w for p, w in fw.score}
    assert weights["TaintToleration"] == 3 and weights["NodeAffinity"] == 2 and weights["NodeResourcesFit"] == 1


def test_each_handle_is_made_with_the_release_never_patched_after(tmp_path: Path) -> None:
    made: list[Handle] = []

    def make_handle(name: str) -> Handle:
        made.append(Handle(scheduler_name=name))
        return made[-1]

    config = parse(HEAD, base=tmp_path)
    registry, errors = load_registry(config.plugin_modules, no_entry_points)
    release = parse_release("1.35")
    profile = build(config, registry, make_handle, errors, release).profiles["default-scheduler"]
    assert profile.handle.release is release and all(p.handle is profile.handle for p in profile.framework.plugins)
    assert made and all(h.release is not release for h in made)  # the factory's handles were left alone
    assert profile.handle.framework is profile.framework  # the dry run's framework: the profile's own


def test_multipoint_and_per_point_enable_disable_and_weights() -> None:
    built = built_from(
        {
            "profiles": [
                {
                    "schedulerName": "s",
                    "plugins": {
                        "multiPoint": {
                            "disabled": [{"name": "*"}],
                            "enabled": [
                                {"name": "NodeResourcesFit", "weight": 4},
                                {"name": "NodeAffinity"},
                                {"name": "DefaultBinder"},
                            ],
                        },
                        "score": {"disabled": [{"name": "NodeAffinity"}]},
                        "filter": {"enabled": [{"name": "NodeName"}]},
                    },
                }
            ]
        }
    )
    got = points(built, "s")
    assert got["filter"] == ("NodeResourcesFit", "NodeAffinity", "NodeName")
    assert got["score"] == ("NodeResourcesFit",)
    assert got["preFilter"] == ("NodeAffinity",)
    fw = built.profiles["s"].framework
    assert [(p.name, w) for p, w in fw.score] == [("NodeResourcesFit", 4)]
    assert [p.name for p in fw.filter] == ["NodeResourcesFit", "NodeAffinity", "NodeName"]


def test_unknown_plugins_wrong_points_and_bad_args_are_all_reported() -> None:
    with pytest.raises(ConfigurationError) as err:
        built_from(
            {
                "profiles": [
                    {
                        "schedulerName": "s",
                        "plugins": {
                            "multiPoint": {"enabled": [{"name": "Nope"}]},
                            "score": {"enabled": [{"name": "NodeName"}]},
                        },
                        # Args of a plugin that is not enabled are ignored, as kube-scheduler does.
                        "pluginConfig": [{"name": "Ghost", "args": {}}],
                    }
                ]
            }
        )
    found = [str(e) for e in err.value.errors]
    assert any(f.startswith("profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin 'Nope'") for f in found)
    assert "profiles[0].plugins.score.enabled[0].name: plugin 'NodeName' does not extend score" in found
    assert not any("Ghost" in f for f in found)
    # kube-scheduler's args rules are checked when the file is read, at the entry's own path.
    with pytest.raises(
        ConfigurationError, match=r"profiles\[0\]\.pluginConfig\[0\]\.args\.scoringStrategy\.type: .*Weird"
    ):
        built_from(
            {
                "profiles": [
                    {
                        "schedulerName": "s",
                        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Weird"}}}],
                    }
                ]
            }
        )


def test_module_paths_and_entry_points_add_plugins_with_their_source(tmp_path: Path) -> None:
    write_plugin(tmp_path / "constant.py")
    (tmp_path / "pkg_for_ep").mkdir()
    write_plugin(tmp_path / "pkg_for_ep" / "__init__.py", name="FromEntryPoint", cls="EP")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        eps = [importlib.metadata.EntryPoint("ep", "pkg_for_ep:EP", "kubesched.plugins")]
        registry, errors = load_registry([f"{tmp_path}/constant.py:Constant"], lambda: eps)
    finally:
        sys.path.remove(str(tmp_path))
    assert errors == []
    rows = {r["name"]: r for r in describe(registry)}
    assert rows["Constant"] == {
        "name": "Constant",
        "extensionPoints": ["score"],
        "source": f"module {tmp_path}/constant.py:Constant",
    }
    assert rows["FromEntryPoint"]["source"].startswith("entry point pkg_for_ep:EP")
    assert rows["NodeResourcesFit"]["source"] == "built-in"


def test_broken_sources_are_reported_not_raised(tmp_path: Path) -> None:
    write_plugin(tmp_path / "dup.py", name="NodeName")
    eps = [importlib.metadata.EntryPoint("bad", "no_such_module_xyz:Thing", "kubesched.plugins")]
    registry, errors = load_registry([f"{tmp_path}/dup.py:Constant", f"{tmp_path}/missing.py:X"], lambda: eps)
    text = [str(e) for e in errors]
    assert any("entry point bad" in t and "ModuleNotFoundError" in t for t in text)
    assert any(t.startswith("pluginModules[0]: plugin 'NodeName'") and "already registered" in t for t in text)
    assert any(t.startswith("pluginModules[1]:") and "cannot load" in t for t in text)
    assert "NodeResourcesFit" in registry


def write_config(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump({**HEAD, **doc}))


def test_reload_applies_a_good_change_and_refuses_a_bad_one(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plugin = write_plugin(tmp_path / "constant.py", score=7)
    config = tmp_path / "config.yaml"
    doc = {
        "pluginModules": ["constant.py:Constant"],
        "profiles": [
            {"schedulerName": "s", "plugins": {"multiPoint": {"enabled": [{"name": "Constant", "weight": 2}]}}}
        ],
    }
    write_config(config, doc)
    current = [build_from_file(config, Handle, no_entry_points)]

    def files() -> list[Path]:
        return [Path(f) for f in map(str, module_files(current[0].config.plugin_modules))]

    reloader = Reloader(config, lambda: build_from_file(config, Handle, no_entry_points), current.append, files)
    assert reloader.check() is None  # nothing changed

    # Re-weighted: applied.
    doc["profiles"][0]["plugins"]["multiPoint"]["enabled"][0]["weight"] = 5
    write_config(config, doc)
    assert reloader.check() is True
    assert dict((p.name, w) for p, w in current[-1].profiles["s"].framework.score)["Constant"] == 5

    # A plugin file edited: the new code is loaded.
    write_plugin(plugin, score=9)
    import os

    os.utime(plugin, ns=(1, 10**18))
    assert reloader.check() is True
    constant = next(p for p, _ in current[-1].profiles["s"].framework.score if p.name == "Constant")
    assert int(constant.score(None, None, [0])[0]) == 9  # type: ignore[arg-type]

    # Bad: refused, every error logged, the running configuration stays.
    doc["profiles"][0]["plugins"]["score"] = {"enabled": [{"name": "Missing"}]}
    doc["percentageOfNodesToScore"] = 200
    write_config(config, doc)
    with caplog.at_level(logging.ERROR, logger="kubesched.scheduler"):
        assert reloader.check() is False
    assert len(current) == 3
    logged = caplog.text
    assert "not in valid range [0-100]" in logged
    assert "profiles[0].plugins.score.enabled[0].name: unknown plugin 'Missing'" in logged  # all at once
    assert "keeping the running one" in logged

    # Removed: applied.
    del doc["profiles"][0]["plugins"]
    del doc["percentageOfNodesToScore"]
    write_config(config, doc)
    assert reloader.check() is True
    assert "Constant" not in [p.name for p, _ in current[-1].profiles["s"].framework.score]
