"""Everything a plugin or policy author needs, in one import: ``from kubesched import plugin``.

A plain list of re-exports (httpx's curated ``__all__``): the extension points' base classes, in batch
and per-node form, the result vocabulary, the node and pod views, and what a policy is made of.
``tests/unit/test_plugin.py`` pins ``__all__``: adding or removing a name is a visible change.
Anything not listed here may change between releases; see docs/plugins.md.
"""

from __future__ import annotations

from kubesched.api.core import Node, Pod
from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import BoolColumn, IntColumn, NodeTable, Rows, table_of
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
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
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "SKIP",
    "SUCCESS",
    "BindPlugin",
    "BoolColumn",
    "ClusterAPI",
    "ClusterAPIError",
    "Code",
    "CycleState",
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
    "table_of",
]
