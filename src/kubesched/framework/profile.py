"""A profile: which plugins run at each extension point, with what weights and args, validated all at once.

Two shapes: `ProfileConfig` is a KubeSchedulerConfiguration profile (per extension point and `multiPoint`,
`enabled`/`disabled`), `ProfileSpec` a flat list (an extender's policy). `expand` turns the first into the
ordered plugins of each extension point by kube-scheduler's rules: the default MultiPoint list (limited to
the plugins that exist), minus `multiPoint.disabled` (`*`: all), plus `multiPoint.enabled` (replacing a
default in place, else appended); then per extension point, that point's `disabled` and `enabled`.
`instantiate` builds the plugins (framework/build.py puts them together into a `Framework`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.errors import ConfigurationError, FieldError, child, index
from kubesched.framework import interfaces as fw
from kubesched.framework.interfaces import Handle, Plugin, ScorePlugin
from kubesched.framework.registry import Registry
from kubesched.versions import EXTENSION_POINTS as EXTENSION_POINTS

MULTI_POINT = "multiPoint"
ALL = "*"

# The class a plugin extends to run at each extension point.
POINT_CLASSES: dict[str, type[Plugin]] = {
    "preEnqueue": fw.PreEnqueuePlugin,
    "queueSort": fw.QueueSortPlugin,
    "preFilter": fw.PreFilterPlugin,
    "filter": fw.FilterPlugin,
    "postFilter": fw.PostFilterPlugin,
    "preScore": fw.PreScorePlugin,
    "score": fw.ScorePlugin,
    "reserve": fw.ReservePlugin,
    "permit": fw.PermitPlugin,
    "preBind": fw.PreBindPlugin,
    "bind": fw.BindPlugin,
    "postBind": fw.PostBindPlugin,
}


def extension_points(cls: type[Plugin]) -> tuple[str, ...]:
    """The extension points a plugin class runs at, in order."""
    return tuple(point for point in EXTENSION_POINTS if issubclass(cls, POINT_CLASSES[point]))


@dataclass(frozen=True)
class PluginRef:
    """A plugin enabled in a profile; ``weight`` counts for Score (0 means the plugin's default)."""

    name: str
    weight: int = 0


@dataclass(frozen=True)
class PluginSet:
    """One extension point's `enabled` (in order, with weights) and `disabled` names."""

    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProfileConfig:
    """A KubeSchedulerConfiguration profile (kube-scheduler's KubeSchedulerProfile); ``path`` is where it was read."""

    scheduler_name: str
    plugins: Mapping[str, PluginSet] = field(default_factory=dict)
    plugin_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    path: str = "profiles[0]"
    # Where each plugin's args were read (`profiles[0].pluginConfig[2].args`), for the plugin's own errors.
    args_paths: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfileSpec:
    """The shape of a KubeSchedulerConfiguration profile, reduced to what the framework needs."""

    scheduler_name: str = "default-scheduler"
    plugins: tuple[PluginRef, ...] = ()
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    args_paths: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BuiltPlugin:
    plugin: Plugin
    weight: int


def instantiate(
    spec: ProfileSpec, registry: Registry, handle: Handle | None = None, path: str = ""
) -> list[BuiltPlugin]:
    """Build the profile's plugins, or raise ConfigurationError listing every problem."""
    handle = handle or Handle(scheduler_name=spec.scheduler_name)
    problems: list[FieldError] = []
    built: list[BuiltPlugin] = []
    seen: set[str] = set()

    def args_at(name: str) -> str:
        return spec.args_paths.get(name) or f"{path}pluginConfig[{name}].args"

    for i, ref in enumerate(spec.plugins):
        where = f"{path}plugins[{i}]"
        if ref.name in seen:
            problems.append(FieldError(f"{where}.name", f"plugin {ref.name!r} is enabled twice"))
            continue
        seen.add(ref.name)
        cls = registry.get(ref.name)
        if cls is None:
            problems.append(
                FieldError(f"{where}.name", f"{registry.unknown(ref.name)} (known: {', '.join(sorted(registry))})")
            )
            continue
        if ref.weight < 0:
            problems.append(FieldError(f"{where}.weight", f"must not be negative, got {ref.weight}"))
        if ref.weight > 0 and not issubclass(cls, ScorePlugin):
            problems.append(
                FieldError(f"{where}.weight", f"plugin {ref.name!r} does not score, a weight has no effect")
            )
        raw_args = spec.plugin_args.get(ref.name)
        args: Any = None
        if cls.Args is not None:
            try:
                args = msgspec.convert(dict(raw_args or {}), cls.Args, strict=False)
            except msgspec.ValidationError as err:
                problems.append(FieldError(args_at(ref.name), str(err)))
                continue
        elif raw_args:
            problems.append(FieldError(args_at(ref.name), f"plugin {ref.name!r} takes no args"))
            continue
        try:
            plugin = cls(args, handle)
        except ValueError as err:
            problems.append(FieldError(args_at(ref.name), str(err)))
            continue
        default_weight = getattr(cls, "default_weight", 1)
        built.append(BuiltPlugin(plugin, ref.weight or default_weight))
    for name in spec.plugin_args:
        if name not in seen:
            problems.append(FieldError(f"{path}pluginConfig[{name}]", "args given for a plugin that is not enabled"))
    if problems:
        raise ConfigurationError("invalid profile:\n" + "\n".join(f"  - {e}" for e in problems), problems)
    return built


def _place(refs: list[PluginRef], ref: PluginRef) -> None:
    for i, existing in enumerate(refs):
        if existing.name == ref.name:
            refs[i] = ref
            return
    refs.append(ref)


def expand(
    profile: ProfileConfig, registry: Registry, defaults: Iterable[tuple[str, int]], errors: list[FieldError]
) -> dict[str, list[PluginRef]]:
    """The plugins of each extension point, in order, with weights at `score`; problems are added to ``errors``.

    ``defaults``: the default MultiPoint plugins with their weights (`kubesched.plugins.UPSTREAM_DEFAULT_PLUGINS`).
    """
    base = child(profile.path, "plugins")

    def known(ref: PluginRef, where: str, point: str | None) -> bool:
        cls = registry.get(ref.name)
        if cls is None:
            errors.append(
                FieldError(child(where, "name"), f"{registry.unknown(ref.name)} (see `kubesched plugins list`)")
            )
            return False
        if point is not None and not issubclass(cls, POINT_CLASSES[point]):
            errors.append(FieldError(child(where, "name"), f"plugin {ref.name!r} does not extend {point}"))
            return False
        return True

    multi = profile.plugins.get(MULTI_POINT, PluginSet())
    plugins: list[PluginRef] = []
    if ALL not in multi.disabled:
        plugins = [
            PluginRef(name, weight) for name, weight in defaults if name in registry and name not in multi.disabled
        ]
    for i, ref in enumerate(multi.enabled):
        if known(ref, index(child(child(base, MULTI_POINT), "enabled"), i), None):
            _place(plugins, ref)
    points: dict[str, list[PluginRef]] = {}
    for point in EXTENSION_POINTS:
        cls = POINT_CLASSES[point]
        refs = [r for r in plugins if issubclass(registry.get(r.name) or Plugin, cls)]
        custom = profile.plugins.get(point)
        if custom is not None:
            refs = [] if ALL in custom.disabled else [r for r in refs if r.name not in custom.disabled]
            for i, ref in enumerate(custom.enabled):
                if known(ref, index(child(child(base, point), "enabled"), i), point):
                    _place(refs, ref)
        points[point] = refs
    return points
