"""A profile: which plugins run, with what weights and args, validated all at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.errors import ConfigurationError, FieldError
from kubesched.framework.interfaces import Handle, Plugin, ScorePlugin
from kubesched.framework.registry import Registry


@dataclass(frozen=True)
class PluginRef:
    """A plugin enabled in a profile; ``weight`` counts for Score (0 means the plugin's default)."""

    name: str
    weight: int = 0


@dataclass(frozen=True)
class ProfileSpec:
    """The shape of a KubeSchedulerConfiguration profile, reduced to what the framework needs."""

    scheduler_name: str = "default-scheduler"
    plugins: tuple[PluginRef, ...] = ()
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


class ProfileError(ConfigurationError):
    """Every problem found in a profile, each naming its field path."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("invalid profile:\n" + "\n".join(f"  - {e}" for e in errors), errors)

    @property
    def problems(self) -> list[str]:
        """The problems as `path: message` lines."""
        return [str(e) for e in self.errors]


@dataclass(frozen=True)
class BuiltPlugin:
    plugin: Plugin
    weight: int


def instantiate(
    spec: ProfileSpec, registry: Registry, handle: Handle | None = None, path: str = ""
) -> list[BuiltPlugin]:
    """Build the profile's plugins, or raise ProfileError listing every problem."""
    handle = handle or Handle(scheduler_name=spec.scheduler_name)
    problems: list[FieldError] = []
    built: list[BuiltPlugin] = []
    seen: set[str] = set()
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
                problems.append(FieldError(f"{path}pluginConfig[{ref.name}].args", str(err)))
                continue
        elif raw_args:
            problems.append(FieldError(f"{path}pluginConfig[{ref.name}].args", f"plugin {ref.name!r} takes no args"))
            continue
        try:
            plugin = cls(args, handle)
        except ValueError as err:
            problems.append(FieldError(f"{path}pluginConfig[{ref.name}].args", str(err)))
            continue
        default_weight = getattr(cls, "default_weight", 1)
        built.append(BuiltPlugin(plugin, ref.weight or default_weight))
    for name in spec.plugin_args:
        if name not in seen:
            problems.append(FieldError(f"{path}pluginConfig[{name}]", "args given for a plugin that is not enabled"))
    if problems:
        raise ProfileError(problems)
    return built
