"""NodeAffinity: the pod's nodeSelector and node affinity, plus the profile's addedAffinity."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.core import NodeAffinity as NodeAffinitySpec
from kubesched.api.core import NodeSelectorTerm
from kubesched.api.node_fields import NodeFields
from kubesched.core.nodeaffinity import (
    NODE_NAME_FIELD,
    Preferences,
    RequiredAffinity,
    Selector,
    compile_preferences,
    compile_selector,
    required_affinity,
)
from kubesched.core.nodetable import IntColumn, NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.events import NODE_CHANGE, ClusterEventWithHint
from kubesched.framework.interfaces import (
    CycleState,
    Handle,
    NodeBatch,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignFragments,
    SignPlugin,
    StaticFilterPlugin,
)
from kubesched.framework.status import SKIP, SUCCESS, Status, Verdicts
from kubesched.plugins.helpers.normalize import default_normalize_score

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REQUIRED = "NodeAffinity/required"
_PREFERRED = "NodeAffinity/preferred"


class NodeAffinityArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """NodeAffinityArgs: an affinity applied to every pod of the profile."""

    added_affinity: NodeAffinitySpec | None = None


def node_name_restriction(terms: list[NodeSelectorTerm]) -> set[str] | None:
    """The node names the required terms allow through ``metadata.name In`` fields, or None if unrestricted.

    Terms are ORed (union), a term's requirements ANDed (intersection); one term without such a field
    leaves every node possible.
    """
    names: set[str] | None = None
    for term in terms:
        term_names: set[str] | None = None
        for req in term.match_fields or ():
            if req.key == NODE_NAME_FIELD and req.operator == "In":
                values = set(req.values or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names = term_names if names is None else names | term_names
    return names


@dataclass(frozen=True)
class _PodPreferences:
    """A pod's compiled preferred terms: None when it sets none; parse errors fail PreScore."""

    terms: Preferences | None
    errors: Sequence[str]


class NodeAffinity(PreFilterPlugin, StaticFilterPlugin, PreScorePlugin, ScorePlugin, SignPlugin):
    """Filters on required node affinity, scores the weights of matching preferred terms."""

    name: ClassVar[str] = "NodeAffinity"
    node_fields = NodeFields(labels=None)
    reads_pods: ClassVar[bool] = False
    Args: ClassVar[type | None] = NodeAffinityArgs
    default_weight: ClassVar[int] = 2

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or changed, if it now matches the pod's required affinity (upstream: Node
        Add|UpdateNodeLabel)."""
        return [ClusterEventWithHint(NODE_CHANGE, self.passes_node)]

    def __init__(self, args: NodeAffinityArgs | None = None, handle: Handle | None = None) -> None:
        args = args or NodeAffinityArgs()
        super().__init__(args, handle)
        added = args.added_affinity
        self.added_required: Selector | None = None
        self.added_preferred: Preferences | None = None
        errors: list[str] = []
        if added is not None:
            required = added.required_during_scheduling_ignored_during_execution
            if required is not None:
                self.added_required = compile_selector(
                    required, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                )
                errors += self.added_required.errors
            preferred = added.preferred_during_scheduling_ignored_during_execution
            if preferred:
                self.added_preferred, errs = compile_preferences(
                    preferred, "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
                )
                errors += errs
        if errors:
            raise ValueError("; ".join(errors))
        self._enforced = Status.unresolvable(ERR_REASON_ENFORCED)
        self._pod = Status.unresolvable(ERR_REASON_POD)

    @staticmethod
    def _required(pod: PodInfo) -> RequiredAffinity:
        compiled = pod.cache.get(_REQUIRED)
        if not isinstance(compiled, RequiredAffinity):
            compiled = pod.cache[_REQUIRED] = required_affinity(pod.pod)
        return compiled

    @staticmethod
    def _preferred(pod: PodInfo) -> _PodPreferences:
        cached = pod.cache.get(_PREFERRED)
        if isinstance(cached, _PodPreferences):
            return cached
        affinity = pod.pod.spec.affinity
        node_affinity = affinity.node_affinity if affinity else None
        terms = node_affinity.preferred_during_scheduling_ignored_during_execution if node_affinity else None
        compiled = _PodPreferences(None, ()) if terms is None else _PodPreferences(*compile_preferences(terms))
        pod.cache[_PREFERRED] = compiled
        return compiled

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        spec = pod.pod.spec
        node_affinity = spec.affinity.node_affinity if spec.affinity else None
        required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
        if required is None and self.added_required is None and spec.node_selector is None:
            return PreFilterResult(SKIP)
        if required is None or not required.node_selector_terms:
            return PreFilterResult()
        names = node_name_restriction(required.node_selector_terms)
        if names is None:
            return PreFilterResult()
        if not names:
            return PreFilterResult(Status.unresolvable(ERR_REASON_CONFLICT))
        return PreFilterResult(node_names=frozenset(names))

    def shape(self, pod: PodInfo) -> Hashable:
        spec = pod.pod.spec
        required = spec.affinity.node_affinity if spec.affinity and spec.affinity.node_affinity else None
        terms = required.required_during_scheduling_ignored_during_execution if required else None
        return msgspec.json.encode((spec.node_selector, terms))

    def sign(self, pod: PodInfo) -> SignFragments:
        # Required and preferred terms (Score reads the preferred ones) and the nodeSelector.
        spec = pod.pod.spec
        affinity = spec.affinity.node_affinity if spec.affinity else None
        return (("nodeAffinity", msgspec.json.encode((spec.node_selector, affinity))),)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        table, rows = nodes.table, nodes.rows
        codes = np.zeros(len(rows), dtype=np.int32)
        required = self._required(pod)
        if not required.matches_all:
            codes[~required.matches(table, rows)] = 2
        # The scheduler-enforced affinity is checked first, so its reason wins.
        if self.added_required is not None:
            codes[~self.added_required.matches(table, rows)] = 1
        return Verdicts(codes, (self._enforced, self._pod))

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        preferred = self._preferred(pod)
        if preferred.errors:
            return Status.error("; ".join(preferred.errors))
        if preferred.terms is None and self.added_preferred is None:
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        scores = np.zeros(len(nodes), dtype=np.int64)
        for prefs in (self.added_preferred, self._preferred(pod).terms):
            if prefs is not None:
                scores += prefs.score(nodes.table, nodes.rows)
        return scores

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        return default_normalize_score(scores)
