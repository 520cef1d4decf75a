"""pytest plugin (entry point ``kubesched``): a real control plane per session, a namespace per test.

Fixtures:
  ``kubernetes_version`` (session) - the `kubesched.versions.Release` the control plane runs: the reference,
      or each supported release in turn for a test marked ``all_kubernetes_versions`` (it runs once per release,
      ids ``k8s-v1.35.4``...; its session fixtures are rebuilt per release, so one control plane runs at a time).
  ``control_plane_binaries`` (session) - the built binaries of that release; builds them if missing, skips
      without Go.
  ``control_plane`` (session) - a started :class:`~kubesched.testing.controlplane.ControlPlane` of that release.
  ``kube_namespace`` (function) - the name of a fresh namespace, deleted afterwards.

Without Go the tier is skipped, except under ``CI=true`` where it fails, so CI cannot go green by skipping.
Logs are kept (and their path printed) when a test that used the control plane failed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

import pytest

from kubesched.testing import build
from kubesched.versions import REFERENCE, SUPPORTED, Release, parse_release

if TYPE_CHECKING:
    from kubesched.testing.controlplane import ControlPlane

_FAILED = pytest.StashKey[bool]()
_KEPT_LOGS = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker for suites that do not declare it themselves."""
    config.addinivalue_line(
        "markers", "controlplane: needs the real etcd + kube-apiserver (+ kube-scheduler) of kubesched.testing"
    )
    config.addinivalue_line(
        "markers",
        "all_kubernetes_versions: run once against the control plane of each supported Kubernetes release",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``all_kubernetes_versions`` runs on the control plane of each supported release."""
    if metafunc.definition.get_closest_marker("all_kubernetes_versions") is None:
        return
    if "kubernetes_version" not in metafunc.fixturenames:
        return
    metafunc.parametrize(
        "kubernetes_version", SUPPORTED, indirect=True, scope="session", ids=[f"k8s-v{v}" for v in SUPPORTED]
    )


@pytest.fixture(scope="session")
def kubernetes_version(request: pytest.FixtureRequest) -> Release:
    """The release the session's control plane runs (parametrized by ``all_kubernetes_versions``)."""
    param = getattr(request, "param", None)
    return parse_release(param) if param is not None else REFERENCE


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember whether any test using the control plane failed (in setup, call or teardown)."""
    report = yield
    if report.failed and "control_plane" in getattr(item, "fixturenames", ()):
        item.config.stash[_FAILED] = True
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the kept logs are, after the failures, where people look."""
    kept = terminalreporter.config.stash.get(_KEPT_LOGS, None)
    if kept:
        terminalreporter.write_line(f"kubesched control-plane logs kept in {kept}", yellow=True)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


@pytest.fixture(scope="session")
def control_plane_binaries(request: pytest.FixtureRequest, kubernetes_version: Release) -> build.Binaries:
    """etcd, kube-apiserver and kube-scheduler of ``kubernetes_version``, built into the cache on first use
    (15-30 min cold)."""
    k8s = kubernetes_version.version
    found = build.cached(k8s)
    if found is not None:
        return found
    reason = build.go_available()
    if reason is not None:
        message = f"control-plane binaries are not built and cannot be built: {reason}"
        if _in_ci():
            pytest.fail(f"{message} (CI=true: refusing to skip)")
        pytest.skip(message)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    # A cold build takes many minutes: let its progress lines through pytest's output capture.
    if capture is not None:
        with capture.global_and_fixture_disabled():
            return build.ensure(k8s, echo=True)
    return build.ensure(k8s, echo=True)


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest, control_plane_binaries: build.Binaries) -> Iterator[ControlPlane]:
    """A running etcd + kube-apiserver for the whole session; start schedulers with ``start_scheduler``."""
    from kubesched.testing.controlplane import ControlPlane

    plane = ControlPlane(control_plane_binaries)
    plane.start()
    try:
        yield plane
    finally:
        if request.config.stash.get(_FAILED, False):
            plane.keep_logs = True
        if plane.keep_logs:
            request.config.stash[_KEPT_LOGS] = str(plane.logs_dir)
        plane.stop()


@pytest.fixture
def kube_namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace name; the namespace and its pods are removed afterwards."""
    name = f"test-{uuid.uuid4().hex[:10]}"
    control_plane.create_namespace(name)
    try:
        yield name
    finally:
        control_plane.delete_namespace(name)
