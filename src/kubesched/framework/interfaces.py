"""The plugin API: kube-scheduler's extension points, in a batch form over many nodes at once.

A Filter or Score plugin receives every candidate node in one call (`NodeBatch`: the node table
and the candidate rows) and answers with one array. Plugins that are easier to write one node at
a time derive from `NodeFilterPlugin` / `NodeScorePlugin`, which adapt a per-node method.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.errors import PluginError
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.events import ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import AlreadyAssignedError as AlreadyAssignedError
from kubesched.framework.handle import BindingUnknownError as BindingUnknownError
from kubesched.framework.handle import ClusterAPI as ClusterAPI
from kubesched.framework.handle import ClusterAPIError as ClusterAPIError
from kubesched.framework.handle import Handle as Handle
from kubesched.framework.handle import ResourceAPI as ResourceAPI
from kubesched.framework.nodeinfo import NodeInfo as NodeInfo
from kubesched.framework.state import CycleState as CycleState
from kubesched.framework.state import NodeBatch as NodeBatch
from kubesched.framework.status import SUCCESS, Code, Status, Verdicts

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@dataclass(frozen=True)
class PreFilterResult:
    """PreFilter's answer: a status and, optionally, the only node names worth filtering.

    A plugin gives ``status`` and ``node_names``; the framework's answer for the whole PreFilter point
    (`Framework.run_pre_filter`) also says which plugins narrowed the nodes (``narrowed_by``, sorted).
    """

    status: Status = SUCCESS
    node_names: frozenset[str] | None = None
    narrowed_by: tuple[str, ...] = ()

    def allows(self, name: str) -> bool:
        return self.node_names is None or name in self.node_names

    def narrow(self, table: NodeTable, rows: Rows, diagnosis: Diagnosis) -> Rows:
        """The ``rows`` PreFilter left; the others are told apart in ``diagnosis`` by the absent status
        (kube-scheduler's "node(s) didn't satisfy plugin(s) [...]")."""
        allowed = self.node_names
        if allowed is None:
            return rows
        names = table.names
        keep = np.fromiter((names[r] in allowed for r in rows.tolist()), dtype=np.bool_, count=len(rows))
        diagnosis.absent = Status.unresolvable(f"node(s) didn't satisfy plugin(s) [{' '.join(self.narrowed_by)}]")
        kept: Rows = rows[keep]
        return kept


# Spellings an older guide taught that nothing reads: refused when the class is defined (the module loads with an
# error naming the hook), so a plugin cannot silently declare nothing and be requeued on every event.
_EVENTS_HOOK = (
    "declare the cluster events that may help a pod it rejected with `def events_to_register(self)` returning "
    '`[plugin.ClusterEventWithHint(plugin.NODE_ADD), ...]` (docs/plugins.md, "Events and queueing hints")'
)
_UNREAD = {
    "events": _EVENTS_HOOK,
    "queueing_hint": "a queueing hint is the second field of a `ClusterEventWithHint` that `events_to_register` "
    'returns: `plugin.ClusterEventWithHint(plugin.POD_DELETE, self.my_hint)` (docs/plugins.md, "Events and '
    'queueing hints")',
}


class Plugin:
    """Base of every plugin. Subclasses set `name` and, if they take args, `Args` (a msgspec Struct)."""

    name: ClassVar[str] = ""
    Args: ClassVar[type | None] = None
    # The Node fields the plugin reads; None means "any": the whole partial Node is decoded.
    node_fields: NodeFields | None = None
    # Whether the plugin may read the pods on a node (node.pods, requested/free columns, victims). True unless
    # declared otherwise: an extender serving only plugins that say False need not watch the cluster's pods.
    reads_pods: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for old, hook in _UNREAD.items():
            if hasattr(cls, old):
                raise PluginError(f"plugin class {cls.__qualname__}: `{old}` is not read by kubesched; {hook}")

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.args = args
        self.handle = handle or Handle()

    def events_to_register(self) -> Sequence[ClusterEventWithHint] | None:
        """The cluster events that may make a pod this plugin rejected schedulable, with their queueing
        hints (kube-scheduler's EventsToRegister; see `framework.events`). None, the default: every
        event may, and moves the pod (a plugin that declares nothing is never kept from a retry)."""
        return None


# A plugin's part of a pod's signature: (key, value) pairs with hashable values.
SignFragments = tuple[tuple[str, Hashable], ...]


class SignPlugin(Plugin):
    """A plugin that can sign pods (kube-scheduler's SignPlugin, KEP-5598 opportunistic batching).

    Two pods whose fragments are equal must get equal verdicts and scores from this plugin on the
    same nodes in the same state. A plugin whose answers depend on other pods or cluster-wide data
    for this pod returns None: the pod is then not signable and never batched. A profile batches
    only when every PreFilter, Filter, PreScore and Score plugin is a SignPlugin.
    """

    def sign(self, pod: PodInfo) -> SignFragments | None:
        raise NotImplementedError

    def signs_statically(self) -> bool:
        """Whether `sign` reads only the pod's spec, labels and namespace (then it is asked once per spec)."""
        return True


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def sort_key(self, pod: PodInfo, queued_at: float) -> tuple[Any, ...]:
        """A key; the active queue pops the smallest first."""
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        raise NotImplementedError


class FilterPlugin(Plugin):
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        raise NotImplementedError

    def passes_node(self, pod: PodInfo, event: ClusterEvent, obj: NodeInfo | PodInfo) -> bool:
        """A queueing hint for node events of a Filter that judges a node by itself and the pod (no
        PreFilter state): whether it now lets the pod onto the node of the event."""
        if not isinstance(obj, NodeInfo):
            return True
        verdicts = self.filter(CycleState(), pod, NodeBatch(obj.table, np.array([obj.row], dtype=np.intp)))
        return verdicts.all_passed or not int(verdicts.codes[0])


class StaticFilterPlugin(FilterPlugin):
    """A Filter whose verdict on a node depends only on the node object and the pod's ``shape``.

    Not on usage, not on other pods. The framework then filters every node once per shape and
    keeps the verdicts (in ``NodeTable.derived``) until a node's labels, taints, cordon or
    allocatable change: pods of the same shape (a ReplicaSet's) pay one array lookup.
    """

    def shape(self, pod: PodInfo) -> Hashable:
        """What of the pod the verdict depends on (equal shapes give equal verdicts)."""
        raise NotImplementedError


class NodeFilterPlugin(FilterPlugin):
    """A Filter plugin written one node at a time."""

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise NotImplementedError

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        codes = np.zeros(len(nodes), dtype=np.int32)
        statuses: list[Status] = []
        seen: dict[Status, int] = {}
        for i, row in enumerate(nodes.rows.tolist()):
            status = self.filter_node(state, pod, NodeInfo(nodes.table, row))
            if status.code != Code.SUCCESS:
                code = seen.get(status)
                if code is None:
                    statuses.append(status)
                    code = seen[status] = len(statuses)
                codes[i] = code
        return Verdicts(codes, statuses)


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> tuple[str | None, Status]:
        """Try to make the pod schedulable later; returns a nominated node name and a status."""
        raise NotImplementedError

    def victims(self, state: CycleState) -> int | None:
        """How many pods the nomination `post_filter` made in ``state`` preempts (None: not a preemption)."""
        return None

    async def after_nomination(self, state: CycleState, pod: PodInfo) -> Status:
        """What must await once `post_filter` nominated a node (DefaultPreemption evicts the victims): the
        scheduler runs it off the scheduling path, then lets gated pods try again."""
        return SUCCESS


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        raise NotImplementedError


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        raise NotImplementedError

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        """NormalizeScore: rescale into [0, 100]. The default keeps the scores as they are."""
        return scores


class NodeScorePlugin(ScorePlugin):
    """A Score plugin written one node at a time."""

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        table = nodes.table
        return np.fromiter(
            (self.score_node(state, pod, NodeInfo(table, r)) for r in nodes.rows.tolist()),
            dtype=np.int64,
            count=len(nodes),
        )


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Undo reserve; must be idempotent."""


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """Allow (SUCCESS), reject, or WAIT with a timeout in seconds."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """kube-scheduler's PreBindPreFlight: SKIP when `pre_bind` has nothing to do for this pod (the
        binding cycle may then run without awaiting), SUCCESS otherwise."""
        return SUCCESS

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError


class BindPlugin(Plugin):
    # A declared capability: True when `bind` does exactly ``await handle.cluster.bind(pod, node)`` and
    # nothing else (DefaultBinder). A scheduler whose cluster binds without awaiting may then run such
    # binding cycles without a task each; a plugin that awaits anything else must leave it False (a
    # subclass that overrides `bind` gets False unless it sets it again).
    binds_through_cluster: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "bind" in cls.__dict__ and "binds_through_cluster" not in cls.__dict__:
            cls.binds_through_cluster = False  # a subclass with a `bind` of its own declares it anew

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Bind the pod, or return SKIP to let the next Bind plugin do it."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


@runtime_checkable
class PreFilterExtensions(Protocol):
    """A PreFilter plugin's AddPod/RemovePod (upstream's PreFilterExtensions): keeps its cycle state right
    while preemption's dry run adds and removes pods on ``row`` (`Framework.run_pre_filter_extension_add_pod`).

    Keeps a PreFilter plugin's cycle state right while the dry run adds and removes pods on ``row``."""

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int) -> None: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int) -> None: ...
