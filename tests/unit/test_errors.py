"""One exception tree: every exception class kubesched defines derives from `KubeschedError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import kubesched
from kubesched.errors import (
    CLIError,
    ClusterError,
    ConfigurationError,
    FieldError,
    InputError,
    KubeschedError,
    PluginError,
    TransportError,
)


def defined_exceptions() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(kubesched.__path__, "kubesched."):
        if info.name == "kubesched.__main__":
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == info.name:
                found.append(obj)
    return found


def test_every_exception_class_derives_from_kubesched_error() -> None:
    found = defined_exceptions()
    assert len(found) >= 30  # the walk did find them (29 had no common root before)
    strays = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in found if not issubclass(cls, KubeschedError))
    assert strays == []


def test_branches_stay_what_callers_catch() -> None:
    from kubesched.cluster.credentials import CredentialError
    from kubesched.cluster.http1 import AnswerLost
    from kubesched.framework.guard import FrameworkError

    assert issubclass(ConfigurationError, ValueError)
    assert issubclass(AnswerLost, TransportError) and issubclass(AnswerLost, OSError)
    assert issubclass(CredentialError, ClusterError) and issubclass(CredentialError, OSError)
    assert issubclass(FrameworkError, PluginError) and issubclass(FrameworkError, RuntimeError)
    assert issubclass(InputError, ValueError)
    assert not issubclass(CLIError, ValueError)


def test_a_configuration_error_carries_its_field_errors() -> None:
    errors = [FieldError("profiles[0].plugins.bind", "at least one bind plugin is needed"), FieldError("a", "b: c")]
    err = ConfigurationError("", errors)
    assert err.errors == tuple(errors)
    assert str(err) == "profiles[0].plugins.bind: at least one bind plugin is needed\na: b: c"


def test_a_scheduler_configuration_that_cannot_be_used_raises_configuration_error_itself() -> None:
    """One class for it (reading, checking, building a profile): no ConfigError/ConfigParseError/ProfileError beside
    it. The subclasses left are about other inputs: a kubeconfig, a cluster file, the deployment's options, the
    webhook's rules, the harness's kube-scheduler file."""
    subclasses = {
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in defined_exceptions()
        if issubclass(cls, ConfigurationError) and cls is not ConfigurationError
    }
    assert subclasses == {
        "kubesched.cluster.files.ClusterFileError",
        "kubesched.cluster.kubeconfig.KubeConfigError",
        "kubesched.deploy.plan.DeployError",
        "kubesched.scheduler.simulate.scenario.ScenarioError",
        "kubesched.scheduler.sweep.spec.SweepError",
        "kubesched.testing.scheduler.SchedulerConfigError",
        "kubesched.webhook.rules_file.WebhookConfigError",
    }
