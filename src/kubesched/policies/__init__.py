"""Policies an extender can serve: the built-in examples, or a user's own, by name or path."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.errors import PluginError
from kubesched.framework.loader import LoadError, load_object
from kubesched.framework.policy import Policy
from kubesched.framework.registry import Registry
from kubesched.plugins import in_tree
from kubesched.policies import custom_label


def builtin() -> dict[str, Callable[[], Policy]]:
    """Built-in policies by name."""
    return {"custom-label": custom_label.policy}


class PolicyError(PluginError, ValueError):
    """A policy spec that names nothing loadable; the message says what was tried."""


def _from_object(obj: object, spec: str) -> Policy:
    if callable(obj) and not isinstance(obj, Policy):
        obj = obj()
    if not isinstance(obj, Policy):
        raise PolicyError(
            f"{spec}: expected a kubesched Policy (or a function returning one), got {type(obj).__name__}"
        )
    return obj


def load(spec: str, *, installed_only: bool = False) -> Policy:
    """Load a policy: a built-in name, ``path/to/file.py[:attr]`` or ``package.module:attr``.

    Without ``:attr`` the module's ``policy`` attribute is used; ``installed_only``: no file, only modules of
    installed packages (`--plugins-from image`).
    """
    factories = builtin()
    if spec in factories:
        return factories[spec]()
    target = spec.rpartition(":")[0] or spec
    if not (target.endswith(".py") or "." in target):
        raise PolicyError(
            f"unknown policy {spec!r}: built-in policies are {', '.join(sorted(factories))}; "
            "or give path/to/policy.py or package.module:attr"
        )
    try:
        return _from_object(load_object(spec, default_attr="policy", installed_only=installed_only), spec)
    except LoadError as err:
        raise PolicyError(str(err)) from None


def is_builtin(spec: str) -> bool:
    """A built-in policy: loading it runs only kubesched's own code."""
    return spec in builtin()


def registry_for(policy: Policy) -> Registry:
    """The in-tree plugins plus the policy's own."""
    registry = in_tree()
    for plugin in policy.plugins:
        if plugin.name not in registry:
            registry.register(plugin, f"policy {policy.name}")
    return registry
