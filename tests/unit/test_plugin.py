"""`from kubesched import plugin`: the curated names for plugin and policy authors, pinned.

Adding or removing a name must show up here (and in docs/plugins.md), as httpx's test_exported_members does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kubesched import plugin
from kubesched.errors import PluginError
from kubesched.scheduler.profiles.manager import load_registry

EXPORTED = [
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


def test_the_event_vocabulary_and_the_binder_errors_are_the_ones_the_queue_and_binder_read() -> None:
    from kubesched.framework import events, handle

    assert plugin.ClusterEventWithHint is events.ClusterEventWithHint
    assert plugin.NODE_CHANGE.atoms() == [plugin.NODE_ADD, plugin.NODE_UPDATE]
    assert plugin.ClusterEvent(plugin.EventResource.ASSIGNED_POD, plugin.ActionType.ALL) == plugin.POD_CHANGE
    assert plugin.BindingUnknownError is handle.BindingUnknownError
    assert issubclass(plugin.AlreadyAssignedError, plugin.ClusterAPIError)


OLD_SPELLINGS = {
    "events": '    events = frozenset({"NodeAdd", "PodDelete"})\n',
    "queueing_hint": "    def queueing_hint(self, pod, event, other):\n        return True\n",
}


@pytest.mark.parametrize("old", OLD_SPELLINGS)
def test_an_old_event_spelling_fails_loudly_when_its_module_is_loaded(old: str, tmp_path: Path) -> None:
    """docs/plugins.md once taught an `events` attribute and a `queueing_hint` method that nothing reads: such
    a plugin declared no events and was requeued on every one, silently. Now its module does not load."""
    source = "from kubesched import plugin\n\n\nclass Old(plugin.NodeFilterPlugin):\n    name = 'Old'\n"
    (tmp_path / "old.py").write_text(source + OLD_SPELLINGS[old])
    registry, errors = load_registry([f"{tmp_path / 'old.py'}:Old"])
    assert "Old" not in registry
    (error,) = errors
    assert error.path == "pluginModules[0]"
    assert f"failed: PluginError: plugin class Old: `{old}` is not read by kubesched" in error.message
    assert "events_to_register" in error.message


def test_an_old_spelling_from_a_mixin_is_refused_too() -> None:
    class Hints:
        def queueing_hint(self, pod: object, event: object, other: object) -> bool:
            return True

    with pytest.raises(PluginError, match="`queueing_hint` is not read by kubesched"):
        type("Mixed", (Hints, plugin.NodeFilterPlugin), {"name": "Mixed"})
