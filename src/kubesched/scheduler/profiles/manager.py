"""Where plugins come from, building a read configuration, and reloading while running.

Sources, in order (a name taken twice is an error): the built-ins (`kubesched.plugins.in_tree`),
the entry points of group `kubesched.plugins` of installed distributions, and the configuration's
`pluginModules` (`pkg.mod:Class`, or `path/to/file.py:Class`, re-imported when the file changes).

Three steps, each done once at start-up: read the configuration (`kubesched.config.profiles`), load the
registry its plugins come from (`load_registry`; `read` does both: a `Loaded`), build it (`build`, or
`Loaded.build`: one Framework per profile, framework/build.py). A hot reload does all three again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.metadata
import importlib.util
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from kubesched.config.profiles import SchedulerConfiguration, default_configuration, read_file
from kubesched.errors import ConfigurationError, FieldError, index
from kubesched.framework.build import build_profiles
from kubesched.framework.interfaces import Handle
from kubesched.framework.loader import load_object, not_installed
from kubesched.framework.profile import extension_points
from kubesched.framework.registry import Registry, RegistryError
from kubesched.plugins import in_tree
from kubesched.scheduler.engine.built import Built as Built
from kubesched.versions import REFERENCE, Release

ENTRY_POINT_GROUP = "kubesched.plugins"
log = logging.getLogger("kubesched.scheduler")

# ---- loading ---------------------------------------------------------------------------------------

EntryPoints = Callable[[], Iterable[importlib.metadata.EntryPoint]]


def _installed_entry_points() -> Iterable[importlib.metadata.EntryPoint]:
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def load_registry(
    modules: Sequence[str] = (), entry_points: EntryPoints = _installed_entry_points, *, installed_only: bool = False
) -> tuple[Registry, list[FieldError]]:
    """Built-ins, entry points and module paths in one registry, and every problem met on the way.

    ``installed_only`` (--plugins-from image): a file or a module of no installed package is refused, not imported."""
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
        refused = not_installed(spec) if installed_only else None
        if refused is not None:
            errors.append(FieldError(where, f"{spec}: {refused}"))
            continue
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


# ---- building --------------------------------------------------------------------------------------


def build(
    config: SchedulerConfiguration,
    registry: Registry,
    make_handle: Callable[[str], Handle],
    errors: Iterable[FieldError] = (),
    release: Release = REFERENCE,
) -> Built:
    """Every profile of an already-read ``config`` from an already-loaded ``registry``, with ``release``'s default
    plugins and semantics (each handle gets it before its plugins are built).

    ConfigurationError lists every problem (``errors`` may bring earlier ones: of reading and loading)."""
    problems = list(errors)

    def handle_of(name: str) -> Handle:
        return dataclasses.replace(make_handle(name), release=release)  # made with the release, not patched

    profiles = build_profiles(
        config.profiles,
        registry,
        handle_of,
        problems,
        defaults=release.default_plugins,
        ignored_resources=config.ignored_resources,
    )
    if problems:
        raise ConfigurationError(errors=problems)
    return Built(config, registry, profiles)


@dataclass(frozen=True)
class PluginSource:
    """The plugins a configuration can name, for `config.check` (the one validator): built-ins, the entry
    points, its `pluginModules`; `build` builds every profile once, with plain handles, for its problems.

    ``installed_only``: --plugins-from image; without ``import_modules`` the `pluginModules` are not imported at all
    (`kubesched manifests` without --load-plugins): only the built-ins and entry points are known."""

    entry_points: EntryPoints = _installed_entry_points
    installed_only: bool = False
    import_modules: bool = True

    def load(self, modules: Sequence[str]) -> tuple[Registry, list[FieldError]]:
        if not self.import_modules:
            return load_registry((), self.entry_points)
        return load_registry(modules, self.entry_points, installed_only=self.installed_only)

    def build(self, config: SchedulerConfiguration, registry: Registry) -> list[FieldError]:
        try:
            build(config, registry, Handle)
        except ConfigurationError as err:
            return list(err.errors)
        return []


@dataclass(frozen=True)
class Loaded:
    """A configuration read and the registry of its plugins loaded, not built yet.

    ``errors``: the problems of reading and loading; `build` raises them together with its own.
    """

    config: SchedulerConfiguration
    registry: Registry
    errors: tuple[FieldError, ...] = ()
    release: Release = REFERENCE

    def build(self, make_handle: Callable[[str], Handle]) -> Built:
        """The configuration's profiles, each plugin given ``make_handle(profile name)``; raises ConfigurationError."""
        return build(self.config, self.registry, make_handle, self.errors, self.release)


def load(
    config: SchedulerConfiguration,
    errors: Iterable[FieldError] = (),
    entry_points: EntryPoints = _installed_entry_points,
    release: Release = REFERENCE,
) -> Loaded:
    """The registry an already-read configuration needs (its plugin files are imported here, once)."""
    registry, load_errors = load_registry(config.plugin_modules, entry_points)
    return Loaded(config, registry, (*errors, *load_errors), release)


def read(
    path: Path | None,
    *,
    default_profile: str | None = None,
    entry_points: EntryPoints = _installed_entry_points,
) -> Loaded:
    """Read ``path`` (None: the default configuration) and load its plugins; ConfigurationError if it cannot be read.

    ``default_profile``: the scheduler name of the one profile when the file names none (else upstream's
    default-scheduler)."""
    if path is None:
        return load(default_configuration(default_profile), entry_points=entry_points)
    config, errors = read_file(path, default_profile=default_profile)
    if config is None:
        raise ConfigurationError(errors=errors)
    return load(config, errors, entry_points)


def build_from_file(
    path: Path,
    make_handle: Callable[[str], Handle],
    entry_points: EntryPoints = _installed_entry_points,
    default_profile: str | None = None,
) -> Built:
    """Read, load and build (a reload does all three); ConfigurationError lists every problem of the file, its
    plugins and their args."""
    return read(path, default_profile=default_profile, entry_points=entry_points).build(make_handle)


def build_default(
    make_handle: Callable[[str], Handle],
    config: SchedulerConfiguration | None = None,
    entry_points: EntryPoints = _installed_entry_points,
) -> Built:
    """The configuration used without --config (one default-scheduler profile), or ``config``, built."""
    return load(config or SchedulerConfiguration(), entry_points=entry_points).build(make_handle)


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
        except ConfigurationError as err:
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
