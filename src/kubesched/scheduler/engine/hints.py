"""Queueing hints: whether a cluster event may make a parked pod schedulable (kube-scheduler's
QueueingHintFn, asked per plugin that rejected the pod, with the events it registered).

A rejecting plugin registered the event (`Plugin.events_to_register`; one that declares nothing
registers every event) and one of its hints, if any, says yes for the node (row ``node`` of the table)
or the pod (``other``) of the event. An event about nothing in particular (a relist) helps any plugin
that registered it; pods an extender rejected move on every event; a hint that raises lets the pod try.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.build import Profile
from kubesched.framework.events import ClusterEvent, Registrations
from kubesched.framework.guard import plugin_error
from kubesched.framework.interfaces import NodeInfo, Plugin
from kubesched.scheduler.engine.cycle import EXTENDER
from kubesched.scheduler.engine.queue import QueuedPod


class QueueingHints:
    """The events each profile's plugins registered; called by the queue for each parked pod and event."""

    def __init__(
        self, table: Callable[[], NodeTable], timing: Callable[[tuple[str, str, str], float], None] | None = None
    ) -> None:
        self._table = table
        # ((plugin, event, "Queue" | "QueueSkip" | "Error"), seconds) of each hint called: kube-scheduler's
        # scheduler_queueing_hint_execution_duration_seconds.
        self._timing = timing
        self._registered: dict[str, dict[str, tuple[Plugin, Registrations | None]]] = {}

    def register(self, profiles: Mapping[str, Profile]) -> None:
        """Each profile's plugins by name with their registrations (again after a reload)."""
        self._registered = {name: profile.framework.registered_events() for name, profile in profiles.items()}

    def gate(self, entry: QueuedPod, event: ClusterEvent) -> bool:
        """Whether the PreEnqueue plugin holding the pod back registered the event (explicitly: a plugin
        that declares nothing is not asked again on every event)."""
        registered = self._registered.get(entry.profile)
        if registered is None:
            return False
        _, events = registered.get(entry.gate.plugin, (None, None))
        return events is not None and event in events

    def __call__(self, entry: QueuedPod, event: ClusterEvent, node: int | None, other: PodInfo | None) -> bool:
        if not entry.unschedulable_plugins or EXTENDER in entry.unschedulable_plugins:
            return True
        registered = self._registered.get(entry.profile)
        if registered is None:
            return True
        for name in entry.unschedulable_plugins:
            plugin, events = registered.get(name, (None, None))
            if events is None:
                return True  # no declaration (or not in the profile): every event
            hints = events.get(event)
            if hints is None:
                continue
            if not hints:
                return True
            obj: NodeInfo | PodInfo
            if other is not None:
                obj = other
            elif node is not None:
                table = self._table()
                if node >= table.size or table.nodes[node] is None:
                    continue  # gone again
                obj = NodeInfo(table, node)
            else:
                return True
            for hint in hints:
                began = time.perf_counter()
                try:
                    queue = hint(entry.info, event, obj)
                except Exception as err:  # a failing hint must not keep the pod parked: let it try
                    self._timed(name, event, "Error", began)
                    plugin_error("QueueingHint", plugin, entry.info, err)
                    return True
                self._timed(name, event, "Queue" if queue else "QueueSkip", began)
                if queue:
                    return True
        return False

    def _timed(self, plugin: str, event: ClusterEvent, hint: str, began: float) -> None:
        if self._timing is not None:
            self._timing((plugin, event.label, hint), time.perf_counter() - began)
