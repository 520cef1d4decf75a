"""What the framework's extension points answer: Filter's feasible rows, the scores, PostFilter's result."""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.core.nodetable import IntColumn, Rows
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interfaces import PostFilterPlugin
from kubesched.framework.status import Code


@dataclass(frozen=True)
class FilterOutcome:
    feasible: Rows
    diagnosis: Diagnosis


@dataclass(frozen=True, slots=True)
class Scores:
    """Every Score plugin's scores over the nodes (in ``Framework.score`` order; None: it skipped).."""

    raw: list[IntColumn | None]
    normalized: list[IntColumn | None]
    totals: IntColumn  # weighted sum per node
    weight_sum: int  # the weights of the plugins that took part


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What PostFilter (preemption) made of a pod no node fits (upstream's PostFilterResult)."""

    code: Code  # the last plugin's code (the extension point's metric)
    reasons: tuple[str, ...]  # for the FitError message
    nominated: str | None = None
    plugin: PostFilterPlugin | None = None  # the plugin that nominated, for its evictions
