"""Where plugins come from, how a profile turns into a Framework, and reloading while running.

Sources, in order (a name taken twice is an error): the built-ins (`kubesched.plugins.in_tree`),
the entry points of group `kubesched.plugins` of installed distributions, and the configuration's
`pluginModules` (`pkg.mod:Class`, or `path/to/file.py:Class`, re-imported when the file changes).

A profile's plugins follow kube-scheduler's rules: the default MultiPoint list (limited to the
plugins that exist), minus `multiPoint.disabled` (`*`: all), plus `multiPoint.enabled` (replacing a
default in place, else appended); then per extension point, that point's `disabled` and `enabled`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.metadata
import importlib.util
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from kubesched.config.errors import FieldError, child, index
from kubesched.config.profiles import (
    ALL,
    EXTENSION_POINTS,
    MULTI_POINT,
    ConfigError,
    PluginSet,
    ProfileConfig,
    SchedulerConfiguration,
    read_file,
)
from kubesched.framework import interfaces as fw
from kubesched.framework.interfaces import Handle, Plugin
from kubesched.framework.loader import load_object
from kubesched.framework.profile import PluginRef, ProfileError, ProfileSpec
from kubesched.framework.registry import Registry, RegistryError
from kubesched.framework.runtime import Framework
from kubesched.plugins import UPSTREAM_DEFAULT_PLUGINS, in_tree

ENTRY_POINT_GROUP = "kubesched.plugins"
log = logging.getLogger("kubesched.scheduler")

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
# Framework attribute holding each extension point's plugins.
_ATTRS = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "queue_sort",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


def extension_points(cls: type[Plugin]) -> tuple[str, ...]:
    return tuple(point for point in EXTENSION_POINTS if issubclass(cls, POINT_CLASSES[point]))


# ---- loading ---------------------------------------------------------------------------------------

EntryPoints = Callable[[], Iterable[importlib.metadata.EntryPoint]]


def _installed_entry_points() -> Iterable[importlib.metadata.EntryPoint]:
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def load_registry(
    modules: Sequence[str] = (), entry_points: EntryPoints = _installed_entry_points
) -> tuple[Registry, list[FieldError]]:
    """Built-ins, entry points and module paths in one registry, and every problem met on the way."""
    registry = in_tree()
    errors: list[FieldError] = []
    for ep in entry_points():
        dist = ep.dist.name if ep.dist is not None else "?"
        where = f"entry point {ep.name} = {ep.value} ({dist})"
        try:
            loaded = ep.load()
        except Exception as err:  # a broken third-party package must not crash us: report it
            errors.append(FieldError(where, f"cannot load: {type(err).__name__}: {err}"))
            continue
        _register(registry, loaded, f"entry point {ep.value} ({dist})", where, errors)
    for i, spec in enumerate(modules):
        where = index("pluginModules", i)
        try:
            loaded = load_object(spec, fresh=True)  # a changed file is imported again
        except Exception as err:
            errors.append(FieldError(where, f"{spec}: cannot load: {type(err).__name__}: {err}"))
            continue
        _register(registry, loaded, f"module {spec}", where, errors)
    return registry, errors


def _register(registry: Registry, obj: Any, source: str, where: str, errors: list[FieldError]) -> None:
    for cls in obj if isinstance(obj, (list, tuple)) else (obj,):
        try:
            registry.register(cls, source)
        except RegistryError as err:
            errors.append(FieldError(where, str(err)))


def module_files(modules: Sequence[str]) -> list[Path]:
    """The plugin files a configuration loads: a change to any of them reloads it too."""
    return [Path(m.rpartition(":")[0]) for m in modules if m.rpartition(":")[0].endswith(".py")]


# ---- profiles --------------------------------------------------------------------------------------


@dataclass
class Profile:
    """One profile at run time: its framework and the handle its plugins hold."""

    name: str
    framework: Framework
    handle: Handle
    percentage_of_nodes_to_score: int | None
    points: Mapping[str, tuple[str, ...]]


@dataclass
class Built:
    """Everything a configuration yields, swapped in as one value."""

    config: SchedulerConfiguration
    registry: Registry
    profiles: dict[str, Profile]


def _place(refs: list[PluginRef], ref: PluginRef) -> None:
    for i, existing in enumerate(refs):
        if existing.name == ref.name:
            refs[i] = ref
            return
    refs.append(ref)


def expand(profile: ProfileConfig, registry: Registry, errors: list[FieldError]) -> dict[str, list[PluginRef]]:
    """The plugins of each extension point, in order, with weights at `score`."""
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
            PluginRef(name, weight)
            for name, weight in UPSTREAM_DEFAULT_PLUGINS
            if name in registry and name not in multi.disabled
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


def build_profile(
    profile: ProfileConfig,
    config: SchedulerConfiguration,
    registry: Registry,
    handle: Handle,
    errors: list[FieldError],
) -> Profile | None:
    """A profile's Framework with each extension point restricted to its expanded list, or None (errors added)."""
    before = len(errors)
    points = expand(profile, registry, errors)
    order: list[str] = []
    for refs in points.values():
        order += [r.name for r in refs if r.name not in order]
    weights = {r.name: r.weight for r in points["score"]}
    args = dict(profile.plugin_config)
    for i, name in enumerate(args):
        if name not in registry:
            where = child(index(child(profile.path, "pluginConfig"), i), "name")
            errors.append(FieldError(where, registry.unknown(name)))
    if config.ignored_resources and "NodeResourcesFit" in order:
        # As kube-scheduler: extender-managed resources replace the profile's ignoredResources.
        fit_args = dict(args.get("NodeResourcesFit", {}))
        fit_args["ignoredResources"] = list(config.ignored_resources)
        args["NodeResourcesFit"] = fit_args
    sorts = points["queueSort"]
    if len(sorts) > 1:
        errors.append(
            FieldError(child(child(profile.path, "plugins"), "queueSort"), "only one queueSort plugin can be enabled")
        )
    if not points["bind"] and any(issubclass(registry.get(n) or Plugin, fw.BindPlugin) for n in registry):
        errors.append(FieldError(child(child(profile.path, "plugins"), "bind"), "at least one bind plugin is needed"))
    if len(errors) > before:
        return None
    spec = ProfileSpec(
        scheduler_name=profile.scheduler_name,
        plugins=tuple(PluginRef(n, weights.get(n, 0)) for n in order),
        plugin_args={k: v for k, v in args.items() if k in order},
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
    )
    try:
        framework = Framework.build(spec, registry, handle, path=f"{profile.path}.")
    except ProfileError as err:
        for problem in err.problems:
            path, _, message = problem.partition(": ")
            errors.append(FieldError(path, message))
        return None
    by_name = {p.name: p for p in framework.plugins}
    for point, refs in points.items():
        attr = _ATTRS[point]
        if point == "score":
            scorers = {p.name: (p, w) for p, w in framework.score}
            setattr(framework, attr, [scorers[r.name] for r in refs])
        else:
            setattr(framework, attr, [by_name[r.name] for r in refs])
    framework.arranged()
    handle.framework = framework
    names = {point: tuple(r.name for r in refs) for point, refs in points.items()}
    return Profile(profile.scheduler_name, framework, handle, profile.percentage_of_nodes_to_score, names)


def build(
    config: SchedulerConfiguration,
    registry: Registry,
    make_handle: Callable[[str], Handle],
    errors: list[FieldError] | None = None,
) -> Built:
    """Every profile of ``config``; ConfigError lists every problem (``errors`` may bring earlier ones)."""
    errors = list(errors or [])
    profiles: dict[str, Profile] = {}
    for p in config.profiles:
        built = build_profile(p, config, registry, make_handle(p.scheduler_name), errors)
        if built is not None:
            profiles[p.scheduler_name] = built
    sorts = {name: prof.points["queueSort"] for name, prof in profiles.items()}
    if len(set(sorts.values())) > 1:
        for i, p in enumerate(config.profiles[1:], start=1):
            if p.scheduler_name in sorts and sorts[p.scheduler_name] != sorts[config.profiles[0].scheduler_name]:
                where = child(child(index("profiles", i), "plugins"), "queueSort")
                errors.append(FieldError(where, "queueSort must be the same for all profiles"))
    if errors:
        raise ConfigError(errors)
    return Built(config, registry, profiles)


def build_from_file(
    path: Path,
    make_handle: Callable[[str], Handle],
    entry_points: EntryPoints = _installed_entry_points,
    default_profile: str | None = None,
) -> Built:
    """Read, load and build; ConfigError lists every problem of the file, its plugins and their args.

    ``default_profile``: the scheduler name of the one profile when the file names none (else upstream's
    default-scheduler)."""
    config, errors = read_file(path)
    if config is None:
        raise ConfigError(errors)
    if default_profile and not config.profiles_named:
        config = dataclasses.replace(config, profiles=(ProfileConfig(default_profile),))
    registry, load_errors = load_registry(config.plugin_modules, entry_points)
    return build(config, registry, make_handle, errors + load_errors)


def build_default(
    make_handle: Callable[[str], Handle],
    config: SchedulerConfiguration | None = None,
    entry_points: EntryPoints = _installed_entry_points,
) -> Built:
    """The configuration used without --config: one default-scheduler profile."""
    config = config or SchedulerConfiguration()
    registry, errors = load_registry(config.plugin_modules, entry_points)
    return build(config, registry, make_handle, errors)


# ---- hot reload ------------------------------------------------------------------------------------

T = TypeVar("T")


class Reloader(Generic[T]):
    """Polls the config file (and the plugin files it loads); a change builds anew and, if good, applies.

    A bad new configuration is refused: every error is logged and the running one stays.
    """

    def __init__(
        self,
        path: Path,
        build: Callable[[], T],
        apply: Callable[[T], None],
        files: Callable[[], Sequence[Path]] = lambda: (),
        interval: float = 1.0,
    ) -> None:
        self.path = path
        self.build = build
        self.apply = apply
        self.files = files
        self.interval = interval
        self.reloads = 0
        self.refusals = 0
        self._stamp = self._current()

    def _current(self) -> tuple[tuple[str, int, int], ...]:
        out = []
        for p in (self.path, *self.files()):
            try:
                st = p.stat()
                out.append((str(p), st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((str(p), -1, -1))
        return tuple(out)

    def check(self) -> bool | None:
        """One poll: True when a new configuration was applied, False when refused, None if unchanged."""
        stamp = self._current()
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        try:
            built = self.build()
        except ConfigError as err:
            self.refusals += 1
            log.error("configuration %s changed but is invalid; keeping the running one", self.path)
            for e in err.errors:
                log.error("  %s", e)
            return False
        self.apply(built)
        self.reloads += 1
        log.info("configuration %s reloaded", self.path)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.check()


def describe(registry: Registry) -> list[dict[str, Any]]:
    """Name, extension points and source of every plugin, for `kubesched plugins list`."""
    return [
        {"name": name, "extensionPoints": list(extension_points(cls)), "source": registry.source(name)}
        for name in sorted(registry)
        if (cls := registry.get(name)) is not None
    ]
