"""The one validator of a KubeSchedulerConfiguration: `kubesched config validate` and `scheduler run` both call it.

kube-scheduler's strict decoding and rules for the selected release (`kubesched.versions.Release`), then ours:
`pluginModules` are loaded and their plugins count as known names, and every profile is built once, so a
plugin's own args checks run too. The verdict separates what kube-scheduler itself refuses (`errors`, field
paths and wording as kube-scheduler's), what only kubesched's scheduler cannot run (`unrunnable`: a
kube-scheduler plugin or extension point kubesched does not implement; kube-scheduler accepts the file), and
`warnings` (legal but probably not meant).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kubesched.config.parse import read_text
from kubesched.config.profiles import SchedulerConfiguration, read, read_file
from kubesched.errors import NOT_IMPLEMENTED, FieldError, child, index
from kubesched.framework.profile import EXTENSION_POINTS, MULTI_POINT, PluginSet, ProfileConfig
from kubesched.framework.registry import Registry, did_you_mean
from kubesched.versions import REFERENCE, Release


class PluginSource(Protocol):
    """Where plugins come from (scheduler/profiles/manager.py): built-ins, entry points, `pluginModules`."""

    @property
    def import_modules(self) -> bool:
        """False: `load` imports no module of `pluginModules`; plugins the registry lacks may come from them."""
        ...

    def load(self, modules: Sequence[str]) -> tuple[Registry, list[FieldError]]:
        """The registry with the configuration's modules loaded, and every problem loading them."""
        ...

    def build(self, config: SchedulerConfiguration, registry: Registry) -> list[FieldError]:
        """Every problem building each profile of ``config`` (its plugins' own args checks)."""
        ...


@dataclass(frozen=True)
class Verdict:
    """What the validator found; ``ok`` when neither kube-scheduler nor kubesched refuses the file."""

    config: SchedulerConfiguration | None
    errors: tuple[FieldError, ...] = ()
    unrunnable: tuple[FieldError, ...] = ()
    warnings: tuple[FieldError, ...] = ()

    @property
    def ok(self) -> bool:
        return self.config is not None and not self.errors and not self.unrunnable

    @property
    def refusals(self) -> list[FieldError]:
        """What `scheduler run` refuses: the errors, then what kubesched cannot run."""
        return [*self.errors, *self.unrunnable]


def validate_file(
    path: Path,
    plugins: PluginSource,
    *,
    release: Release = REFERENCE,
    default_profile: str | None = None,
    build: bool = True,
) -> Verdict:
    """Validate the configuration file at ``path`` for the kube-scheduler ``release``.

    ``build=False`` leaves the last step, building every profile, to a caller that builds it anyway (the
    scheduler, with its own handles): the same `PluginSource.build` then reports the same problems."""
    config, errors = read_file(path, default_profile=default_profile, release=release)
    return _finish(config, errors, plugins, release, build)


def validate_text(
    text: str, plugins: PluginSource, *, release: Release = REFERENCE, base: Path | None = None
) -> Verdict:
    """Validate a configuration given as YAML or JSON text (relative `pluginModules` files are taken from ``base``)."""
    doc, yaml_errors = read_text(text)
    if doc is None and yaml_errors:
        return Verdict(None, tuple(yaml_errors))
    config, errors = read(doc, base, release=release)
    return _finish(config, [*yaml_errors, *errors], plugins, release, True)


def validate_configuration(
    config: SchedulerConfiguration, plugins: PluginSource, *, release: Release = REFERENCE, build: bool = True
) -> Verdict:
    """Validate a configuration already read (the default one, or one with flags laid over it)."""
    return _finish(config, [], plugins, release, build)


def _finish(
    config: SchedulerConfiguration | None,
    errors: list[FieldError],
    plugins: PluginSource,
    rel: Release,
    build: bool,
) -> Verdict:
    if config is None:
        return Verdict(None, tuple(errors))
    errors += _queue_sort(config.profiles) if config.profiles_named else []
    registry, load_errors = plugins.load(config.plugin_modules)
    errors += load_errors
    known = set(registry) | rel.in_tree_plugins
    unrunnable: list[FieldError] = []
    warnings: list[FieldError] = []
    # pluginModules not imported: a name the registry lacks may be theirs; said, not refused, and nothing is built.
    unimported = bool(config.plugin_modules) and not plugins.import_modules
    unchecked = 0
    for profile in config.profiles:
        for point, refs in profile.plugins.items():
            seen: set[str] = set()
            for i, ref in enumerate(refs.enabled):
                at = index(child(child(child(profile.path, "plugins"), point), "enabled"), i)
                if ref.name in seen:
                    kind = point if point == MULTI_POINT else point[0].upper() + point[1:] + "Plugin"
                    errors.append(FieldError(child(at, "name"), f'plugin "{ref.name}" already registered as "{kind}"'))
                    continue
                seen.add(ref.name)
                if ref.name not in known and unimported:
                    unchecked += 1
                    warnings.append(FieldError(child(at, "name"), f'plugin "{ref.name}": {UNCHECKED}'))
                elif ref.name not in known:
                    hint = did_you_mean(ref.name, known).replace("'", '"')
                    errors.append(FieldError(child(at, "name"), f'plugin "{ref.name}" does not exist{hint}'))
                elif ref.name not in registry:
                    unrunnable.append(FieldError(child(at, "name"), _not_ours(ref.name)))
                elif point not in EXTENSION_POINTS and point != MULTI_POINT:
                    unrunnable.append(
                        FieldError(at, f"kubesched's scheduler has no {point} extension point (kube-scheduler does)")
                    )
        warnings += [] if unimported else _unused_args(profile, known)
    if build and not errors and not unrunnable and not unchecked:
        for problem in plugins.build(config, registry):
            # A plugin's args kube-scheduler accepts but kubesched's plugin cannot honour (it says so in these
            # words, e.g. VolumeBinding's `shape`): unrunnable, like a plugin kubesched lacks, not invalid.
            (unrunnable if NOT_IMPLEMENTED in problem.message else errors).append(problem)
    return Verdict(config, tuple(errors), tuple(unrunnable), tuple(warnings))


UNCHECKED = "not built in nor an entry point; not checked: pluginModules were not imported"


def _not_ours(name: str) -> str:
    return (
        f'plugin "{name}" is a kube-scheduler plugin kubesched does not implement: kube-scheduler accepts this'
        " configuration, kubesched's scheduler cannot run it"
    )


def _unused_args(profile: ProfileConfig, known: set[str]) -> list[FieldError]:
    """pluginConfig naming no known plugin: kube-scheduler ignores it, which is rarely what was meant."""
    out: list[FieldError] = []
    for name, at in profile.args_paths.items():
        if not name:
            out.append(FieldError(at.removesuffix(".args"), "has no name: kube-scheduler ignores these args"))
        elif name not in known:
            message = f"names no known plugin{did_you_mean(name, known)}: kube-scheduler ignores these args"
            out.append(FieldError(at.removesuffix(".args"), message))
    return out


def _queue_sort(profiles: Sequence[ProfileConfig]) -> list[FieldError]:
    """validateCommonQueueSort: every profile configures queueSort as the first does (the plugin sets as written)."""
    errors: list[FieldError] = []
    first = profiles[0].plugins.get("queueSort", PluginSet()) if profiles else PluginSet()
    if len(first.enabled) > 1:
        at = child(child(profiles[0].path, "plugins"), "queueSort.Enabled")
        errors.append(FieldError(at, f"Invalid value: {len(first.enabled)}: only one queue sort plugin can be enabled"))
    sort_name = first.enabled[0].name if first.enabled else ""
    sort_args = profiles[0].plugin_config.get(sort_name) if profiles and sort_name else None
    for profile in profiles[1:]:
        current = profile.plugins.get("queueSort", PluginSet())
        if current != first:
            at = child(child(profile.path, "plugins"), "queueSort")
            errors.append(FieldError(at, "Invalid value: queueSort must be the same for all profiles"))
        if sort_name and sort_name in profile.plugin_config and profile.plugin_config[sort_name] != sort_args:
            at = child(child(profile.path, "pluginConfig"), "args")
            errors.append(FieldError(at, "Invalid value: queueSort must be the same for all profiles"))
    return errors
