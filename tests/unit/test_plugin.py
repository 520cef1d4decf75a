"""`from kubesched import plugin`: the curated names for plugin and policy authors, pinned.

Adding or removing a name must show up here (and in docs/plugins.md), as httpx's test_exported_members does.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kubesched import plugin

EXPORTED = [
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
SOURCE = Path(plugin.__file__)


def test_all_is_exactly_the_pinned_list() -> None:
    assert plugin.__all__ == EXPORTED


def test_every_exported_name_resolves() -> None:
    missing = [name for name in EXPORTED if not hasattr(plugin, name)]
    assert missing == []


def test_no_public_name_outside_all() -> None:
    public = {n for n in vars(plugin) if n.isidentifier() and not n.startswith("_") and n != "annotations"}
    assert public == set(EXPORTED)


def test_the_module_only_re_exports() -> None:
    """A plain list of re-exports: imports and `__all__`, no definitions of its own."""
    tree = ast.parse(SOURCE.read_text())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Assign"}
    assigns = [node for node in tree.body if isinstance(node, ast.Assign)]
    assigned = [t.id for node in assigns for t in node.targets if isinstance(t, ast.Name)]
    assert assigned == ["__all__"]
    sources = {node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)} - {"__future__"}
    allowed = ("kubesched.api.", "kubesched.core.", "kubesched.framework.", "kubesched.plugins.helpers.")
    assert sorted(s for s in sources if not s.startswith(allowed)) == []


def test_the_names_are_the_framework_s_own_objects() -> None:
    from kubesched.framework import interfaces, policy, profile, status
    from kubesched.plugins.helpers import normalize

    assert plugin.NodeFilterPlugin is interfaces.NodeFilterPlugin
    assert plugin.Verdicts is status.Verdicts
    assert plugin.Policy is policy.Policy
    assert plugin.ProfileSpec is profile.ProfileSpec
    assert plugin.default_normalize_score is normalize.default_normalize_score
