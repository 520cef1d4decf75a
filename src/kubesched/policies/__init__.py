"""Policies an extender can serve: the built-in examples, or a user's own, by name or path."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from kubesched.framework.policy import Policy
from kubesched.framework.registry import Registry
from kubesched.plugins import in_tree
from kubesched.policies import custom_label


def builtin() -> dict[str, Callable[[], Policy]]:
    """Built-in policies by name."""
    return {"custom-label": custom_label.policy}


class PolicyError(ValueError):
    """A policy spec that names nothing loadable; the message says what was tried."""


def _from_object(obj: object, spec: str) -> Policy:
    if callable(obj) and not isinstance(obj, Policy):
        obj = obj()
    if not isinstance(obj, Policy):
        raise PolicyError(
            f"{spec}: expected a kubesched Policy (or a function returning one), got {type(obj).__name__}"
        )
    return obj


def load(spec: str) -> Policy:
    """Load a policy: a built-in name, ``path/to/file.py[:attr]`` or ``package.module:attr``.

    Without ``:attr`` the module's ``policy`` attribute is used.
    """
    factories = builtin()
    if spec in factories:
        return factories[spec]()
    target, _, attr = spec.partition(":")
    attr = attr or "policy"
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise PolicyError(f"{spec}: no such file {path}")
        mod_name = f"kubesched_user_policy_{abs(hash(str(path.resolve())))}"
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise PolicyError(f"{spec}: cannot load {path} as a Python module")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as err:
            raise PolicyError(f"{spec}: importing {path} failed: {type(err).__name__}: {err}") from err
    elif ":" in spec or "." in target:
        try:
            module = importlib.import_module(target)
        except ImportError as err:
            raise PolicyError(f"{spec}: cannot import {target}: {err}") from err
    else:
        raise PolicyError(
            f"unknown policy {spec!r}: built-in policies are {', '.join(sorted(factories))}; "
            "or give path/to/policy.py or package.module:attr"
        )
    if not hasattr(module, attr):
        raise PolicyError(f"{spec}: {target} has no attribute {attr!r}")
    return _from_object(getattr(module, attr), spec)


def registry_for(policy: Policy) -> Registry:
    """The in-tree plugins plus the policy's own."""
    registry = in_tree()
    for plugin in policy.plugins:
        if plugin.name not in registry:
            registry.register(plugin, f"policy {policy.name}")
    return registry
