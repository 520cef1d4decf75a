"""A policy: what an extender serves — a profile of plugins plus the extended resources it manages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import Plugin
from kubesched.framework.profile import ProfileSpec

# Given the preemptor, a node and the UIDs of the victims proposed there: the victims to keep
# (a subset, to trim), or None to veto the node.
PreemptHook = Callable[[PodInfo, str, list[str]], list[str] | None]


@dataclass(frozen=True)
class ManagedResource:
    """An extended resource the extender is responsible for (KubeSchedulerConfiguration `managedResources`)."""

    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True)
class Policy:
    """A named profile served by the extender, with the resources it manages."""

    name: str
    profile: ProfileSpec
    managed_resources: tuple[ManagedResource, ...] = field(default=())
    plugins: tuple[type[Plugin], ...] = ()  # the policy's own plugin classes, beside the in-tree ones
    preempt: PreemptHook | None = None
    description: str = ""
