"""Explain without a command line: a cluster file and a configuration in, an `Explanation` out.

What `kubesched explain --cluster` runs, and what policy authors call from their tests (the pytest plugin
`kubesched.scheduler.explain.pytest_plugin`): offline and deterministic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from kubesched.cluster.files import ClusterFile, read_cluster
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.storage import volume_objects
from kubesched.config.check import validate_configuration, validate_file
from kubesched.config.profiles import default_configuration
from kubesched.core.podinfo import PodInfo
from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.explain.evaluate import Objects, explain
from kubesched.scheduler.explain.model import Explanation
from kubesched.scheduler.profiles.manager import PluginSource, load_registry
from kubesched.scheduler.profiles.manager import build as build_profiles
from kubesched.scheduler.remote.extenders import ExtenderSet, HTTPExtender
from kubesched.versions import REFERENCE, Release, parse_release

Build = Callable[[Callable[[str], Handle]], Built]


class ReadOnlyExtenders(ExtenderSet):
    """The configured extenders for an explanation: filter, prioritize and preempt asked, bind never (an
    extender that binds would bind the pod in the live cluster; the in-memory cluster binds instead)."""

    def binder(self, pod: PodInfo) -> HTTPExtender | None:
        return None


def objects_of(found: ClusterFile) -> Objects:
    """A cluster file's objects as the explainer reads them."""
    return Objects(
        found.nodes,
        found.pods,
        found.namespaces,
        found.pdbs,
        default_selector=found.workloads.default_selector,
        volumes=volume_objects(found.storage),
        resources=ResourceObjects(found.device_classes, found.resource_slices, found.resource_claims),
    )


def configuration(path: Path | None, release: Release = REFERENCE, installed_only: bool = False) -> Build:
    """How to build the configuration at ``path`` (None: kube-scheduler's defaults) as `scheduler run` builds
    it; ConfigurationError (with field paths) when the validator or the build refuses it."""
    plugins = PluginSource(installed_only=installed_only)
    if path is None:
        verdict = validate_configuration(default_configuration(), plugins, release=release, build=False)
    else:
        verdict = validate_file(path, plugins, release=release, build=False)
    if verdict.config is None or verdict.refusals:
        raise ConfigurationError(errors=verdict.refusals)
    config = verdict.config

    def build(make_handle: Callable[[str], Handle]) -> Built:
        registry, errors = load_registry(config.plugin_modules, installed_only=installed_only)
        return build_profiles(config, registry, make_handle, errors, release)

    return build


def explain_file(
    cluster: Path | str,
    pod: str,
    *,
    config: Path | str | None = None,
    kubernetes_version: str | None = None,
    helps: bool = True,
) -> Explanation:
    """Explain ``pod`` (``NAMESPACE/NAME``) on the cluster file ``cluster`` with the configuration file
    ``config`` (default: kube-scheduler's defaults) for ``kubernetes_version`` (default: the reference)."""
    release = parse_release(kubernetes_version) if kubernetes_version else REFERENCE
    build = configuration(Path(config) if config is not None else None, release)
    objects = objects_of(read_cluster(Path(cluster)))
    return asyncio.run(explain(build, objects, pod, f"v{release.version}", helps, ReadOnlyExtenders))
