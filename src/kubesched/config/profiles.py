"""The scheduler's configuration: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

Read with the shared config package (top level, extenders, leaderElection, clientConnection, with
kube-scheduler's validation), then the parts only a scheduler needs: each profile's `plugins` (per
extension point and `multiPoint`, `enabled` with weights and `disabled`, `*` for all) and
`pluginConfig`. One kubesched key is added at the top: `pluginModules`, plugin classes to load from
`pkg.mod:Class` or `path/to/file.py:Class`. Every problem is collected with its field path before
anything is raised. Which plugin names exist is checked later, when building (framework/build.py against
the registry of scheduler/profiles/manager.py).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.config.argspec import duplicate, invalid
from kubesched.config.duration import Duration
from kubesched.config.parse import DOCUMENT, read_document, read_text
from kubesched.config.pluginargs import validate_args
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME, Extender, LegacyPolicy, SchedulerConfigV1
from kubesched.config.validation import OURS, validate
from kubesched.errors import ConfigurationError, FieldError, child, index
from kubesched.framework.profile import ALL, MULTI_POINT, PluginRef, PluginSet, ProfileConfig
from kubesched.versions import REFERENCE, REMOVED_PLUGINS, Release

# Our own lease, so we never take kube-scheduler's (kube-system/kube-scheduler).
DEFAULT_LEASE_NAME = "kubesched-scheduler"
DEFAULT_LEASE_NAMESPACE = "kube-system"
# The profile of a live scheduler whose configuration names none: never kube-scheduler's default-scheduler,
# which the cluster's own scheduler serves (both would bind the same pods).
LIVE_DEFAULT_PROFILE = "kubesched"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """kube-scheduler's defaults (15 s / 10 s / 2 s), with a lease of our own."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = DEFAULT_LEASE_NAME
    resource_namespace: str = DEFAULT_LEASE_NAMESPACE


@dataclass(frozen=True)
class SchedulerConfiguration:
    """What the scheduler runs from: a `SchedulerConfigV1` document read, defaulted and checked (`read`)."""

    profiles: tuple[ProfileConfig, ...] = (ProfileConfig(DEFAULT_SCHEDULER_NAME),)
    extenders: tuple[Extender, ...] = ()
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    leader_election: LeaderElectionConfig = LeaderElectionConfig()
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100
    plugin_modules: tuple[str, ...] = ()
    profiles_named: bool = False  # whether the file lists profiles (else the default one stands in)

    @property
    def ignored_resources(self) -> tuple[str, ...]:
        """Extender-managed resources with ignoredByScheduler: NodeResourcesFit stops checking them."""
        return tuple(r.name for e in self.extenders for r in e.managed_resources if r.ignored_by_scheduler)


def load_file(path: Path, *, release: Release = REFERENCE) -> SchedulerConfiguration:
    """Read and check a configuration file; ConfigurationError lists every problem."""
    config, errors = read_file(path, release=release)
    if errors or config is None:
        raise ConfigurationError(errors=errors)
    return config


def read_file(
    path: Path, *, default_profile: str | None = None, release: Release = REFERENCE
) -> tuple[SchedulerConfiguration | None, list[FieldError]]:
    """Best effort: the configuration (None if unreadable) and every problem found in it.

    ``default_profile``: the scheduler name of the one profile when the file names none (else upstream's
    default-scheduler)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return None, [FieldError(DOCUMENT, f"cannot read {path}: {getattr(err, 'strerror', None) or err}")]
    doc, yaml_errors = read_text(text)
    if doc is None and yaml_errors:
        return None, yaml_errors
    config, errors = read(doc, base=path.parent, release=release)
    errors = [*yaml_errors, *errors]
    if config is not None and default_profile and not config.profiles_named:
        config = dataclasses.replace(config, profiles=(ProfileConfig(default_profile),))
    return config, errors


def default_configuration(profile: str | None = None) -> SchedulerConfiguration:
    """The configuration used without a file: one profile, ``profile`` (else upstream's default-scheduler)."""
    return SchedulerConfiguration(profiles=(ProfileConfig(profile),)) if profile else SchedulerConfiguration()


def parse(doc: object, base: Path | None = None, *, release: Release = REFERENCE) -> SchedulerConfiguration:
    """The configuration in ``doc``; relative file paths in `pluginModules` are taken from ``base``."""
    config, errors = read(doc, base, release=release)
    if errors or config is None:
        raise ConfigurationError(errors=errors)
    return config


def read(
    doc: object, base: Path | None = None, *, release: Release = REFERENCE
) -> tuple[SchedulerConfiguration | None, list[FieldError]]:
    """Best effort: the configuration (bad values left as given or defaulted) and every problem found.

    ``release``: the kube-scheduler release whose configuration API and rules apply."""
    rel = release
    errors: list[FieldError] = []
    modules: tuple[str, ...] = ()
    if isinstance(doc, Mapping) and "pluginModules" in doc:
        doc = dict(doc)
        modules = _modules(doc.pop("pluginModules"), base, errors)
    model, read_errors = read_document(doc)
    errors += read_errors
    if isinstance(model, LegacyPolicy):
        errors.append(
            FieldError("kind", "a legacy Policy cannot configure a scheduler; use KubeSchedulerConfiguration")
        )
        model = None
    if model is None:
        return None, errors
    # A field that failed to parse was left at its zero value; don't also report what that zero value breaks.
    bad = tuple(e.path for e in errors)
    errors += [e for e in validate(model) if not any(_within(e.path, b) for b in bad)]
    return _convert(model, modules, errors, rel), errors


def _within(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _modules(value: object, base: Path | None, errors: list[FieldError]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errors.append(FieldError("pluginModules", 'must be a list of "pkg.mod:Class" or "path/to/file.py:Class"'))
        return ()
    out = []
    for i, spec in enumerate(value):
        target, sep, attr = spec.rpartition(":")
        if not sep or not target or not attr.isidentifier():
            errors.append(
                FieldError(index("pluginModules", i), f'{spec!r}: expected "pkg.mod:Class" or "file.py:Class"')
            )
            continue
        if target.endswith(".py") and base is not None and not Path(target).is_absolute():
            target = str(base / target)
        out.append(f"{target}:{attr}")
    return tuple(out)


def _number(extra: Mapping[str, object], key: str, default: int) -> int:
    value = extra.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _convert(
    model: SchedulerConfigV1, modules: tuple[str, ...], errors: list[FieldError], rel: Release
) -> SchedulerConfiguration:
    profiles = tuple(
        _profile(p.scheduler_name, p.extra, index("profiles", i), errors, rel) for i, p in enumerate(model.profiles)
    ) or (ProfileConfig(DEFAULT_SCHEDULER_NAME),)
    client = model.client_connection_extra
    # kube-scheduler's defaults replace a zero (v1 SetDefaults_KubeSchedulerConfiguration).
    qps, burst = client.get("qps") or 50.0, client.get("burst") or 100
    if isinstance(burst, int) and burst < 0:
        errors.append(FieldError("clientConnection.burst", f"Invalid value: {burst}: must be non-negative"))
    if isinstance(qps, (int, float)) and qps < 0:
        # client-go turns rate limiting off for a negative qps; kubesched's API client needs a rate.
        message = f"must be positive (got {qps}): kubesched's API client does not run without a rate limit"
        errors.append(FieldError("clientConnection.qps", message + OURS, upstream=False))
    return SchedulerConfiguration(
        profiles=profiles,
        extenders=model.extenders,
        percentage_of_nodes_to_score=_number(model.extra, "percentageOfNodesToScore", 0),
        pod_initial_backoff_seconds=_number(model.extra, "podInitialBackoffSeconds", 1),
        pod_max_backoff_seconds=_number(model.extra, "podMaxBackoffSeconds", 10),
        leader_election=_leader_election(model, errors),
        kubeconfig=model.kubeconfig,
        qps=float(qps) if isinstance(qps, (int, float)) else 50.0,
        burst=burst if isinstance(burst, int) else 100,
        plugin_modules=modules,
        profiles_named=bool(model.profiles),
    )


def _leader_election(model: SchedulerConfigV1, errors: list[FieldError]) -> LeaderElectionConfig:
    le = model.leader_election
    if le is None:
        return LeaderElectionConfig()

    def seconds(key: str, default: float) -> float:
        value = le.extra.get(key)
        return Duration.parse(value).total_seconds() if isinstance(value, str) else default

    out = LeaderElectionConfig(
        leader_elect=le.leader_elect,
        lease_duration=seconds("leaseDuration", 15.0),
        renew_deadline=seconds("renewDeadline", 10.0),
        retry_period=seconds("retryPeriod", 2.0),
        resource_name=le.resource_name or DEFAULT_LEASE_NAME,
        resource_namespace=le.resource_namespace or DEFAULT_LEASE_NAMESPACE,
    )
    if out.leader_elect:
        # client-go's leaderelection.NewLeaderElector rules.
        for key, value in (("leaseDuration", out.lease_duration), ("renewDeadline", out.renew_deadline)):
            if value <= 0:
                errors.append(FieldError(f"leaderElection.{key}", "must be greater than zero"))
        if out.retry_period <= 0:
            errors.append(FieldError("leaderElection.retryPeriod", "must be greater than zero"))
        if out.lease_duration <= out.renew_deadline:
            errors.append(FieldError("leaderElection.leaseDuration", "must be greater than renewDeadline"))
        if out.renew_deadline <= 1.2 * out.retry_period:
            errors.append(FieldError("leaderElection.renewDeadline", "must be greater than 1.2 × retryPeriod"))
    return out


def _profile(
    name: str, extra: Mapping[str, object], path: str, errors: list[FieldError], rel: Release
) -> ProfileConfig:
    plugins: dict[str, PluginSet] = {}
    raw_plugins = extra.get("plugins")
    if isinstance(raw_plugins, Mapping):
        known = (MULTI_POINT, *(p for p in rel.extension_points if p != MULTI_POINT))
        for point, value in raw_plugins.items():
            at = child(child(path, "plugins"), str(point))
            if point not in known:
                errors.append(FieldError(at, _unknown_point(str(point), known, rel)))
            elif value is not None:
                weighted = point in (MULTI_POINT, "score", "placementScore")
                plugins[str(point)] = _plugin_set(value, at, weighted, errors)
    config: dict[str, Mapping[str, Any]] = {}
    config_paths: dict[str, str] = {}
    raw_config = extra.get("pluginConfig")
    for i, item in enumerate(raw_config if isinstance(raw_config, list) else ()):
        at = index(child(path, "pluginConfig"), i)
        if not isinstance(item, Mapping):
            errors.append(FieldError(at, "must be an object with name and args"))
            continue
        for key in item:
            if key not in ("name", "args"):
                errors.append(FieldError(child(at, str(key)), "unknown field"))
        plugin, args = item.get("name"), item.get("args")
        if plugin is None or plugin == "":
            config_paths.setdefault("", child(at, "args"))  # kube-scheduler ignores it: a warning (config/check.py)
            continue
        if not isinstance(plugin, str):
            errors.append(FieldError(child(at, "name"), "must be a string"))
            continue
        if plugin in config:
            errors.append(duplicate(at, plugin))
        if plugin in REMOVED_PLUGINS:
            errors.append(invalid(at, plugin, _REMOVED))
        if args is not None and not isinstance(args, Mapping):
            errors.append(FieldError(child(at, "args"), "must be an object"))
            continue
        errors += validate_args(plugin, args, child(at, "args"), rel)
        # apiVersion/kind inside args name the Go type; the plugin's own Args type decides here.
        config.setdefault(plugin, {k: v for k, v in (args or {}).items() if k not in ("apiVersion", "kind")})
        config_paths.setdefault(plugin, child(at, "args"))
    pct = extra.get("percentageOfNodesToScore")
    return ProfileConfig(
        scheduler_name=name,
        plugins=plugins,
        plugin_config=config,
        percentage_of_nodes_to_score=pct if isinstance(pct, int) and not isinstance(pct, bool) else None,
        path=path,
        args_paths=config_paths,
    )


_REMOVED = 'was invalid in version "v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")'


def _unknown_point(point: str, known: tuple[str, ...], rel: Release) -> str:
    if point in ("placementGenerate", "placementScore", "podGroupPostFilter"):
        return f"unknown field; {point} is an extension point of kube-scheduler 1.37, not of {rel.minor}"
    close = [k for k in known if k.lower() == point.lower()] or difflib.get_close_matches(point, known, n=1)
    return f"unknown field; did you mean {close[0]!r}?" if close else f"unknown field; known: {', '.join(known)}"


def _plugin_set(value: object, at: str, weighted: bool, errors: list[FieldError]) -> PluginSet:
    if not isinstance(value, Mapping):
        errors.append(FieldError(at, "must be an object with enabled and disabled lists"))
        return PluginSet()
    for key in value:
        if key not in ("enabled", "disabled"):
            errors.append(FieldError(child(at, str(key)), "unknown field; expected enabled or disabled"))
    enabled = []
    # A weight outside score and multiPoint is ignored, as kube-scheduler ignores it.
    for i, item in enumerate(_items(value.get("enabled"), child(at, "enabled"), errors)):
        where = index(child(at, "enabled"), i)
        name, weight = _ref(item, where, ("name", "weight"), errors)
        if name == ALL:
            errors.append(FieldError(child(where, "name"), "'*' can only be disabled"))
            continue
        if name in REMOVED_PLUGINS:
            errors.append(invalid(where, name, _REMOVED))
            continue
        if weight < 0:
            errors.append(FieldError(child(where, "weight"), f"must not be negative (got {weight})"))
        if name:
            enabled.append(PluginRef(name, weight if weighted else 0))
    disabled = []
    for i, item in enumerate(_items(value.get("disabled"), child(at, "disabled"), errors)):
        name, _ = _ref(item, index(child(at, "disabled"), i), ("name",), errors)
        if name:
            disabled.append(name)
    return PluginSet(tuple(enabled), tuple(disabled))


def _items(value: object, at: str, errors: list[FieldError]) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(FieldError(at, "must be a list"))
        return []
    return value


def _ref(item: object, at: str, keys: tuple[str, ...], errors: list[FieldError]) -> tuple[str, int]:
    if not isinstance(item, Mapping):
        errors.append(FieldError(at, "must be an object with a name"))
        return "", 0
    for key in item:
        if key not in keys:
            close = difflib.get_close_matches(str(key), keys, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            errors.append(FieldError(child(at, str(key)), f"unknown field{hint}"))
    name, weight = item.get("name"), item.get("weight", 0)
    if not isinstance(name, str) or not name:
        errors.append(FieldError(child(at, "name"), "is required"))
        name = ""
    if weight is None:
        weight = 0
    if not isinstance(weight, int) or isinstance(weight, bool):
        errors.append(FieldError(child(at, "weight"), "must be an integer"))
        weight = 0
    return name, weight
