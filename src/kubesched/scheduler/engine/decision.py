"""What a scheduling cycle returns (`Cycle.run`): a `Decision` or a `Rejection`, frozen values.

A decision is a node the pod is assumed on, reserved and permitted (Permit's waits still to come, in the
binding cycle); a rejection says why not: the status and message, the plugins that rejected the pod (the
queue's hints), PostFilter's nomination. Both carry the pod's `CycleState` and the cycle's counts; ``node``
is None exactly for a rejection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from kubesched.core.podinfo import PodInfo
from kubesched.framework.guard import FrameworkError
from kubesched.framework.interfaces import CycleState, PostFilterPlugin
from kubesched.framework.status import SUCCESS, Status


@dataclass(frozen=True, slots=True)
class Decision:
    """The pod's node: assumed in the cache, reserved, permitted (or waiting at Permit)."""

    pod: PodInfo
    state: CycleState
    node: str
    waits: Mapping[str, float] = field(default_factory=dict)  # Permit plugins that said Wait, with timeouts
    evaluated: int = 0  # nodes Filter looked at (0: the nominated node, taken without search)
    feasible: int = 0  # nodes that passed Filter and the filter extenders
    status: ClassVar[Status] = SUCCESS
    error: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Rejection:
    """No node this time: why (an Unschedulable status, or an Error one), and what PostFilter did."""

    pod: PodInfo
    state: CycleState
    status: Status
    message: str
    plugins: frozenset[str] = frozenset()  # plugins (or "Extender") that rejected the pod
    nominated: str | None = None  # PostFilter's (preemption's) nominated node
    post_filter: PostFilterPlugin | None = None  # the plugin that nominated it, for its evictions
    failure: FrameworkError | None = None  # the plugin error that ended the attempt (for the metric)
    evaluated: int = 0
    feasible: int = 0
    node: ClassVar[None] = None

    @property
    def error(self) -> bool:
        """An Error status (a failure, backed off as such), not a rejection."""
        return not self.status.ok and not self.status.rejected

    @staticmethod
    def failed(pod: PodInfo, state: CycleState, err: FrameworkError) -> Rejection:
        """The attempt ended by a plugin's error."""
        return Rejection(pod, state, err.status, str(err), failure=err)
