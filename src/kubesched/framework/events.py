"""Cluster events and queueing hints: what can make a pod a plugin rejected schedulable again.

kube-scheduler's `ClusterEvent`, `ClusterEventWithHint` and `QueueingHintFn`, coarsened to the events
the scheduler sees: a node added or changed (its labels, spec or allocatable), a pod bound to a node
added, changed or gone. A plugin declares its interest with `Plugin.events_to_register`; the scheduler
moves a parked pod on an event only if a plugin that rejected it registered the event and its hint (if
any) answers True for the pod and the object of the event: a `NodeInfo` for a node event, the other
pod's `PodInfo` for a pod event. A plugin that declares nothing (returns None) is asked about no event:
every event moves the pods it rejected, as before hints existed.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubesched.core.podinfo import PodInfo
from kubesched.framework.nodeinfo import NodeInfo


class ActionType(enum.Flag):
    """What happened to the object (kube-scheduler's ActionType, updates not told apart)."""

    ADD = enum.auto()
    UPDATE = enum.auto()
    DELETE = enum.auto()
    ALL = ADD | UPDATE | DELETE


class EventResource(enum.Enum):
    NODE = "Node"
    ASSIGNED_POD = "AssignedPod"  # a pod bound to a node (unscheduled pods' own updates are not hinted)
    # Storage objects (the volume plugins): registered without hints, they move every pod such a plugin
    # rejected (kube-scheduler's hints narrow this to the pods naming the claim; ours requeue a little more).
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    # Dynamic resource allocation's objects (their events carry no object for hints: they always help).
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of cluster event; ``action`` may combine several in a registration (``ADD | UPDATE``)."""

    resource: EventResource
    action: ActionType

    @property
    def label(self) -> str:
        """kube-scheduler's ClusterEvent.Label() for one action: `NodeAdd`, `AssignedPodDelete`."""
        return self.resource.value + (self.action.name or "").title()

    def atoms(self) -> list[ClusterEvent]:
        """One event per single action of ``action``."""
        return [ClusterEvent(self.resource, a) for a in ActionType if a is not ActionType.ALL and a in self.action]


NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
NODE_UPDATE = ClusterEvent(EventResource.NODE, ActionType.UPDATE)
POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD)
POD_UPDATE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE)
POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
NODE_CHANGE = ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE)
CLAIM_CHANGE = ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE)
SLICE_CHANGE = ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)
CLASS_CHANGE = ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
POD_CHANGE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ALL)

# (the pod that was rejected, the event, what it is about) -> whether the event may make it schedulable.
QueueingHintFn = Callable[[PodInfo, ClusterEvent, "NodeInfo | PodInfo"], bool]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """An event a plugin registers, with the hint that tells if it helps (None: it always may)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


# Per single event, the hints to ask (an empty tuple: the event helps without asking).
Registrations = dict[ClusterEvent, tuple[QueueingHintFn, ...]]


def registrations(declared: Iterable[ClusterEventWithHint] | None) -> Registrations | None:
    """A plugin's declaration by single event; None when it declared nothing (every event helps)."""
    if declared is None:
        return None
    out: Registrations = {}
    for registered in declared:
        for event in registered.event.atoms():
            hints = out.get(event)
            if registered.hint is None or hints == ():
                out[event] = ()  # one registration without a hint: the event always helps
            else:
                out[event] = (*(hints or ()), registered.hint)
    return out
