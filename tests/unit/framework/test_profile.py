"""The framework owns the profile: a configured profile expanded and built without the scheduler's package."""

from __future__ import annotations

import pytest

from kubesched.errors import ConfigurationError, FieldError
from kubesched.framework.build import build_profiles
from kubesched.framework.interfaces import Handle
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig, ProfileSpec, instantiate
from kubesched.framework.runtime import Framework
from kubesched.plugins import UPSTREAM_DEFAULT_PLUGINS, in_tree


def test_a_framework_is_built_from_ordered_per_point_lists() -> None:
    registry = in_tree()
    refs = tuple(PluginRef(n) for n in ("NodeResourcesFit", "TaintToleration", "ImageLocality"))
    built = {b.plugin.name: b.plugin for b in instantiate(ProfileSpec(plugins=refs), registry)}
    fit, taints, images = built["NodeResourcesFit"], built["TaintToleration"], built["ImageLocality"]
    fw = Framework(ProfileSpec(), filter=[taints, fit], score=[(images, 2), (taints, 3)])  # type: ignore[list-item]
    assert fw.filter == [taints, fit] and fw.pre_filter == [] and fw.bind == []
    assert [(p.name, w) for p, w in fw.score] == [("ImageLocality", 2), ("TaintToleration", 3)]
    assert [p.name for p in fw.plugins] == ["TaintToleration", "NodeResourcesFit", "ImageLocality"]
    assert fw.normalizes == [False, True]  # derived at construction (TaintToleration normalizes): no call afterwards
    assert not hasattr(fw, "arranged")


def test_build_profiles_expands_per_point_orders_and_weights() -> None:
    profile = ProfileConfig(
        "p",
        plugins={
            "multiPoint": PluginSet(
                (PluginRef("PrioritySort"), PluginRef("NodeResourcesFit", 1), PluginRef("DefaultBinder")), ("*",)
            ),
            "score": PluginSet((PluginRef("ImageLocality", 4), PluginRef("NodeResourcesFit", 3))),
            "filter": PluginSet((PluginRef("TaintToleration"),)),
        },
    )
    errors: list[FieldError] = []
    profiles = build_profiles([profile], in_tree(), Handle, errors, defaults=UPSTREAM_DEFAULT_PLUGINS)
    assert errors == []
    fw = profiles["p"].framework
    # NodeResourcesFit replaced in place at score (weight 3), ImageLocality before it as listed.
    assert [(p.name, w) for p, w in fw.score] == [("NodeResourcesFit", 3), ("ImageLocality", 4)]
    assert [p.name for p in fw.filter] == ["NodeResourcesFit", "TaintToleration"]
    assert [p.name for p in fw.queue_sort] == ["PrioritySort"] and [p.name for p in fw.bind] == ["DefaultBinder"]
    assert profiles["p"].handle.framework is fw


def test_the_queue_sort_and_bind_checks_name_their_fields() -> None:
    no_bind = ProfileConfig("a", plugins={"bind": PluginSet(disabled=("*",))}, path="profiles[0]")
    other_sort = ProfileConfig("b", plugins={"queueSort": PluginSet(disabled=("*",))}, path="profiles[1]")
    errors: list[FieldError] = []
    build_profiles([no_bind, other_sort], in_tree(), Handle, errors, defaults=UPSTREAM_DEFAULT_PLUGINS)
    assert [str(e) for e in errors] == ["profiles[0].plugins.bind: at least one bind plugin is needed"]
    ok = ProfileConfig("a", path="profiles[0]")
    errors = []
    build_profiles([ok, other_sort], in_tree(), Handle, errors, defaults=UPSTREAM_DEFAULT_PLUGINS)
    assert [str(e) for e in errors] == ["profiles[1].plugins.queueSort: queueSort must be the same for all profiles"]


def test_a_profile_error_carries_field_errors_not_strings_to_split() -> None:
    spec = ProfileSpec(plugins=(PluginRef("NodeAffinity"),), plugin_args={"NodeAffinity": {"addedAffinity": 3}})
    with pytest.raises(ConfigurationError) as err:
        instantiate(spec, in_tree(), path="profiles[2].")
    (problem,) = err.value.errors
    assert problem.path == "profiles[2].pluginConfig[NodeAffinity].args"
    assert problem.message.startswith("Expected `object | null`, got `int`")
    assert str(err.value) == f"invalid profile:\n  - {problem}"
