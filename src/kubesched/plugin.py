"""Everything a plugin or policy author needs, in one import: ``from kubesched import plugin``.

A plain list of re-exports (httpx's curated ``__all__``): the extension points' base classes, in batch
and per-node form, the result vocabulary, the node and pod views, the cluster events a plugin registers
(`events_to_register`) with their queueing hints, the errors a binder raises, and what a policy is made of.
Test helpers (``table_of``) are in `kubesched.testing.builders`.
``tests/unit/test_plugin.py`` pins ``__all__``: adding or removing a name is a visible change.
Anything not listed here may change between releases; see docs/plugins.md.
"""

from __future__ import annotations

from kubesched.api.core import Node, Pod
from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import BoolColumn, IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import (
    CLAIM_CHANGE,
    CLASS_CHANGE,
    NODE_ADD,
    NODE_CHANGE,
    NODE_UPDATE,
    POD_ADD,
    POD_CHANGE,
    POD_DELETE,
    POD_UPDATE,
    SLICE_CHANGE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHintFn,
)
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    AlreadyAssignedError,
    BindingUnknownError,
    BindPlugin,
    ClusterAPI,
    ClusterAPIError,
    CycleState,
    FilterPlugin,
    Handle,
    NodeBatch,
    NodeFilterPlugin,
    NodeInfo,
    NodeScorePlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SignFragments,
    SignPlugin,
    StaticFilterPlugin,
)
from kubesched.framework.policy import ManagedResource, Policy, PreemptHook
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.registry import Registry
from kubesched.framework.status import SKIP, SUCCESS, Code, Status, Verdicts
from kubesched.plugins.helpers.normalize import default_normalize_score

__all__ = [
    "CLAIM_CHANGE",
    "CLASS_CHANGE",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NODE_ADD",
    "NODE_CHANGE",
    "NODE_UPDATE",
    "POD_ADD",
    "POD_CHANGE",
    "POD_DELETE",
    "POD_UPDATE",
    "SKIP",
    "SLICE_CHANGE",
    "SUCCESS",
    "ActionType",
    "AlreadyAssignedError",
    "BindPlugin",
    "BindingUnknownError",
    "BoolColumn",
    "ClusterAPI",
    "ClusterAPIError",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EventResource",
    "FilterPlugin",
    "Handle",
    "IntColumn",
    "ManagedResource",
    "Node",
    "NodeBatch",
    "NodeFields",
    "NodeFilterPlugin",
    "NodeInfo",
    "NodeScorePlugin",
    "NodeTable",
    "PermitPlugin",
    "Plugin",
    "PluginRef",
    "Pod",
    "PodInfo",
    "Policy",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "PreemptHook",
    "ProfileSpec",
    "QueueSortPlugin",
    "QueueingHintFn",
    "Registry",
    "ReservePlugin",
    "Rows",
    "ScorePlugin",
    "SignFragments",
    "SignPlugin",
    "StaticFilterPlugin",
    "Status",
    "Verdicts",
    "default_normalize_score",
]
