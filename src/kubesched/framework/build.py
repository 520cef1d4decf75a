"""Building configured profiles: each `ProfileConfig` expanded, its plugins built, one `Framework` per profile.

Takes an already-read configuration and an already-loaded registry; every problem is collected as a
`FieldError` with its path (nothing is raised here: the caller raises them together with its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kubesched.errors import ConfigurationError, FieldError, child, index
from kubesched.framework import interfaces as fw
from kubesched.framework.interfaces import Handle, Plugin
from kubesched.framework.profile import (
    EXTENSION_POINTS,
    PluginRef,
    ProfileConfig,
    ProfileSpec,
    expand,
    instantiate,
)
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework

P = TypeVar("P", bound=Plugin)


@dataclass
class Profile:
    """One profile at run time: its framework and the handle its plugins hold."""

    name: str
    framework: Framework
    handle: Handle
    percentage_of_nodes_to_score: int | None
    points: Mapping[str, tuple[str, ...]]


def build_profile(
    profile: ProfileConfig,
    registry: Registry,
    handle: Handle,
    errors: list[FieldError],
    *,
    defaults: Iterable[tuple[str, int]] = (),
    ignored_resources: Sequence[str] = (),
) -> Profile | None:
    """A profile's Framework with each extension point's expanded list, or None (its problems added to ``errors``).

    ``defaults``: the default MultiPoint plugins and weights; ``ignored_resources``: extender-managed resources
    NodeResourcesFit stops checking (as kube-scheduler, they replace the profile's own ignoredResources).
    """
    before = len(errors)
    points = expand(profile, registry, defaults, errors)
    order: list[str] = []
    for refs in points.values():
        order += [r.name for r in refs if r.name not in order]
    weights = {r.name: r.weight for r in points["score"]}
    # Args of a plugin that is not enabled are ignored, as kube-scheduler does (config/check.py warns of them).
    args = dict(profile.plugin_config)
    if ignored_resources and "NodeResourcesFit" in order:
        fit_args = dict(args.get("NodeResourcesFit", {}))
        fit_args["ignoredResources"] = list(ignored_resources)
        args["NodeResourcesFit"] = fit_args
    plugins_path = child(profile.path, "plugins")
    if len(points["queueSort"]) > 1:
        errors.append(FieldError(child(plugins_path, "queueSort"), "only one queueSort plugin can be enabled"))
    if not points["bind"] and any(issubclass(registry.get(n) or Plugin, fw.BindPlugin) for n in registry):
        errors.append(FieldError(child(plugins_path, "bind"), "at least one bind plugin is needed"))
    if len(errors) > before:
        return None
    spec = ProfileSpec(
        scheduler_name=profile.scheduler_name,
        plugins=tuple(PluginRef(n, weights.get(n, 0)) for n in order),
        plugin_args={k: v for k, v in args.items() if k in order},
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        args_paths=profile.args_paths,
    )
    try:
        built = instantiate(spec, registry, handle, path=f"{profile.path}.")
    except ConfigurationError as err:
        errors.extend(err.errors)
        return None
    by_name = {b.plugin.name: b for b in built}

    def at(point: str, cls: type[P]) -> list[P]:  # expand let in only plugins of the point's class
        return [p for r in points[point] if isinstance(p := by_name[r.name].plugin, cls)]

    framework = Framework(
        spec,
        pre_enqueue=at("preEnqueue", fw.PreEnqueuePlugin),
        queue_sort=at("queueSort", fw.QueueSortPlugin),
        pre_filter=at("preFilter", fw.PreFilterPlugin),
        filter=at("filter", fw.FilterPlugin),
        post_filter=at("postFilter", fw.PostFilterPlugin),
        pre_score=at("preScore", fw.PreScorePlugin),
        score=[(p, by_name[p.name].weight) for p in at("score", fw.ScorePlugin)],
        reserve=at("reserve", fw.ReservePlugin),
        permit=at("permit", fw.PermitPlugin),
        pre_bind=at("preBind", fw.PreBindPlugin),
        bind=at("bind", fw.BindPlugin),
        post_bind=at("postBind", fw.PostBindPlugin),
        plugins=[b.plugin for b in built],
    )
    handle.framework = framework
    names = {point: tuple(r.name for r in points[point]) for point in EXTENSION_POINTS}
    return Profile(profile.scheduler_name, framework, handle, profile.percentage_of_nodes_to_score, names)


def build_profiles(
    profiles: Sequence[ProfileConfig],
    registry: Registry,
    make_handle: Callable[[str], Handle],
    errors: list[FieldError],
    *,
    defaults: Iterable[tuple[str, int]] = (),
    ignored_resources: Sequence[str] = (),
) -> dict[str, Profile]:
    """Every profile that builds, by scheduler name; the problems of all (and queueSort's agreement) in ``errors``."""
    defaults = tuple(defaults)
    built: dict[str, Profile] = {}
    for p in profiles:
        handle = make_handle(p.scheduler_name)
        one = build_profile(p, registry, handle, errors, defaults=defaults, ignored_resources=ignored_resources)
        if one is not None:
            built[p.scheduler_name] = one
    sorts = {name: prof.points["queueSort"] for name, prof in built.items()}
    if len(set(sorts.values())) > 1:
        for i, p in enumerate(profiles[1:], start=1):
            if p.scheduler_name in sorts and sorts[p.scheduler_name] != sorts[profiles[0].scheduler_name]:
                where = child(child(index("profiles", i), "plugins"), "queueSort")
                errors.append(FieldError(where, "queueSort must be the same for all profiles"))
    return built
