"""What the engine needs of the configured extenders (kube-scheduler's Extender interface, for the whole set).

The engine declares it and never speaks HTTP: `scheduler.remote.extenders.ExtenderSet` implements it,
and the shell hands the scheduler a factory (`Scheduler(..., extenders=ExtenderSet)`). Without one a
scheduler has no extenders, and a configuration that names some is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from kubesched.config.v1 import Extender
from kubesched.core.nodetable import NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.errors import PluginError
from kubesched.framework.status import Status

# Preemption's candidates, node name -> (victims, PDB violations), and a node's pods by UID.
Candidates = Mapping[str, tuple[Sequence[PodInfo], int]]
PodsOn = Callable[[str], Mapping[str, PodInfo]]


class ExtenderError(PluginError):
    """An extender call failed (transport, status, answer); the message says which extender and verb."""


class BindingExtender(Protocol):
    """An extender that binds (its `bindVerb`)."""

    config: Extender

    async def bind(self, pod: PodInfo, node: str) -> None: ...


class Extenders(Protocol):
    """The configured extenders in kube-scheduler's order; calls raise ExtenderError."""

    def __len__(self) -> int: ...

    def any_filter_or_prioritize(self) -> bool: ...

    def filters(self, pod: PodInfo) -> Sequence[object]:
        """The filter extenders interested in ``pod`` (empty: none to ask)."""

    def prioritizers(self, pod: PodInfo) -> Sequence[object]:
        """The prioritize extenders interested in ``pod``."""

    def binder(self, pod: PodInfo) -> BindingExtender | None: ...

    async def filter(self, pod: PodInfo, table: NodeTable, names: list[str]) -> tuple[list[str], dict[str, Status]]:
        """The names every interested filter extender passes, and the others' statuses."""

    async def prioritize(self, pod: PodInfo, table: NodeTable, rows: Rows) -> dict[str, int]:
        """Per node name, the sum over interested prioritizers of score × weight × 10."""

    def preempt(self, pod: PodInfo, candidates: Candidates, pods_on: PodsOn) -> Candidates:
        """The candidates every interested preempt extender keeps."""

    async def aclose(self) -> None: ...


ExtendersFactory = Callable[[Sequence[Extender]], Extenders]


class NoExtenders:
    """No extenders: what a scheduler without an extender client has."""

    def __len__(self) -> int:
        return 0

    def any_filter_or_prioritize(self) -> bool:
        return False

    def filters(self, pod: PodInfo) -> Sequence[object]:
        return ()

    def prioritizers(self, pod: PodInfo) -> Sequence[object]:
        return ()

    def binder(self, pod: PodInfo) -> BindingExtender | None:
        return None

    async def filter(self, pod: PodInfo, table: NodeTable, names: list[str]) -> tuple[list[str], dict[str, Status]]:
        return names, {}

    async def prioritize(self, pod: PodInfo, table: NodeTable, rows: Rows) -> dict[str, int]:
        return {}

    def preempt(self, pod: PodInfo, candidates: Candidates, pods_on: PodsOn) -> Candidates:
        return candidates

    async def aclose(self) -> None:
        pass


def no_extenders(configs: Sequence[Extender]) -> Extenders:
    """The factory of a scheduler built without an extender client: refuses a configuration that names some."""
    if configs:
        raise ValueError("the configuration names extenders, but this scheduler was built without an extender client")
    return NoExtenders()
