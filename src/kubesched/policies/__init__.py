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


def pod_readers(policy: Policy) -> list[str]:
    """The policy's plugins that may read the pods on a node (every plugin not declaring `reads_pods = False`)."""
    registry = registry_for(policy)
    names = dict.fromkeys(ref.name for ref in policy.profile.plugins)
    return [name for name in names if (cls := registry.get(name)) is None or cls.reads_pods]


def needs_pods(policy: Policy) -> bool:
    """Whether the extender must watch the cluster's pods to answer as kube-scheduler would (`--watch-pods auto`):
    a plugin may read them, or the policy manages a resource (usage is counted from the pods)."""
    return bool(policy.managed_resources) or bool(pod_readers(policy))


def pod_blindness(policy: Policy) -> str | None:
    """Why the policy answers wrong when the extender does not watch pods; None when it reads none."""
    readers = pod_readers(policy)
    managed = [r.name for r in policy.managed_resources]
    if not (readers or managed):
        return None
    why = [f"plugin(s) {', '.join(readers)} may read the pods on a node"] if readers else []
    why += [f"the usage of {', '.join(managed)} is counted from pods"] if managed else []
    return (
        f"policy {policy.name}: {' and '.join(why)}, but pods are not watched: only the pods the extender bound"
        " are seen on nodes, and its answers differ from kube-scheduler's and kubesched scheduler's"
    )
