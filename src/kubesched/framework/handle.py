"""What the framework offers plugins at construction (kube-scheduler's framework.Handle), field by field.

Every field but the profile's name is optional: where the shell has no such thing (an extender has no
cluster to bind to, a unit test no nominator) it is None, and a plugin that needs it answers with an
Error status rather than crash. The scheduler fills them all (`Scheduler.make_handle`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubesched.api.core import LabelSelector
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.api.resource_v1 import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.core.nodetable import NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.errors import ClusterError
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.state import CycleState, NodeBatch
from kubesched.framework.volumes import Volumes
from kubesched.versions import REFERENCE, Release


class DryRunFramework(Protocol):
    """What a plugin may run of its profile's framework (`Handle.framework`): preemption's dry run, as
    kube-scheduler's Handle offers RunFilterPlugins and RunPreFilterExtensionAddPod / RemovePod."""

    def run_filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, diagnosis: Diagnosis) -> Rows:
        """The rows of ``nodes`` that pass every Filter plugin; the others' statuses go to ``diagnosis``."""

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int
    ) -> None:
        """Tell the PreFilter extensions that ``added`` now counts on ``row`` (their state in ``state``)."""

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int
    ) -> None:
        """Tell the PreFilter extensions that ``removed`` no longer counts on ``row``."""


class ClusterAPI(Protocol):
    """The cluster as plugins see it: the scheduler shell implements it over the API server or in memory."""

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST the pods/binding subresource; raise ClusterAPIError on failure."""

    async def evict(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> None:
        """Preempt ``victim`` for ``preemptor``: DisruptionTarget condition, delete, `Preempted` event."""

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        """Patch status.nominatedNodeName ('' clears it)."""

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        """The PodDisruptionBudgets the cluster source knows (empty when it tracks none)."""

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """Labels of a namespace (for namespaceSelector terms), None when unknown."""


class ResourceAPI(Protocol):
    """Dynamic resource allocation's objects as the cluster source keeps them, and the one write
    (`cluster.resources.ResourceObjects`): DeviceClasses, ResourceSlices, ResourceClaims."""

    @property
    def served(self) -> bool:
        """Whether the cluster serves resource.k8s.io/v1 (a cluster without it has no claims to satisfy)."""

    def claim(self, namespace: str, name: str) -> ResourceClaim | None: ...

    def claims(self) -> Mapping[str, ResourceClaim]:
        """Every claim by namespace/name."""

    def device_class(self, name: str) -> DeviceClass | None: ...

    def slices(self) -> Sequence[ResourceSlice]: ...

    async def reserve(self, claim: ResourceClaim, allocation: AllocationResult | None, pod: PodInfo) -> ResourceClaim:
        """Write status.allocation (when given) and add the pod to status.reservedFor, through the claim's
        status subresource; the claim as stored after. Raises ClusterAPIError."""


class ClusterAPIError(ClusterError):
    """A cluster call failed; the message says what and why."""


class BindingUnknownError(ClusterAPIError):
    """A Binding was sent but its answer was lost (timeout, connection cut): it may have been applied.

    The scheduler keeps the pod counted on the node until the watch tells what happened.
    """


class AlreadyAssignedError(ClusterAPIError):
    """The server refused the Binding because the pod is already bound (409); ``node`` is where, if known."""

    def __init__(self, message: str, node: str | None = None) -> None:
        super().__init__(message)
        self.node = node


class NominatedPods(Protocol):
    """The scheduler's nominator (kube-scheduler's PodNominator): pods nominated to a node by preemption."""

    def on(self, node: str) -> list[PodInfo]: ...

    def remove(self, uid: str) -> None: ...


class WaitingPod(Protocol):
    """A pod held at Permit (kube-scheduler's WaitingPod)."""

    @property
    def pod(self) -> PodInfo: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class WaitingPods(Protocol):
    """The pods waiting at Permit: Permit plugins allow or reject them (GetWaitingPod, IterateOverWaitingPods)."""

    def get(self, uid: str) -> WaitingPod | None: ...

    def __iter__(self) -> Iterator[WaitingPod]: ...


# Preemption's candidates: node name -> (victims, number of PDB violations).
VictimsMap = dict[str, tuple[list[PodInfo], int]]
# The extenders' preempt verb: (preemptor, candidates) -> the candidates they keep (may raise ClusterAPIError).
PreemptExtenders = Callable[[PodInfo, VictimsMap], Mapping[str, tuple[Sequence[PodInfo], int]]]
# kube-scheduler's DefaultSelector: the selector of the Services, ReplicaSets… that select a pod (None: none).
DefaultSelector = Callable[[PodInfo], LabelSelector | None]


@dataclass
class Handle:
    """What a profile's plugins get: the profile's name and what the shell running them offers.

    ``framework`` is the profile's own, seen through `DryRunFramework` (DefaultPreemption dry-runs its Filter
    plugins), set once by framework/build.py when the profile is built: the plugins it runs get this very
    handle first, as kube-scheduler's plugins get the frameworkImpl being built; ``preempt_extenders`` lets
    the configured extenders trim preemption's candidates;
    ``default_selector`` feeds PodTopologySpread's default constraints; ``volumes`` the volume plugins;
    ``resources`` is what DynamicResources reads and writes (None: the shell keeps no such objects);
    ``release`` is the Kubernetes release whose semantics the plugins follow (the selected one; given when the
    handle is made, profiles/manager.py).
    """

    scheduler_name: str = "default-scheduler"
    cluster: ClusterAPI | None = None
    framework: DryRunFramework | None = None
    nominator: NominatedPods | None = None
    waiting_pods: WaitingPods | None = None
    preempt_extenders: PreemptExtenders | None = None
    default_selector: DefaultSelector | None = None
    volumes: Volumes | None = None  # PVs, PVCs, StorageClasses, CSINodes (the volume plugins)
    resources: ResourceAPI | None = None
    release: Release = REFERENCE
