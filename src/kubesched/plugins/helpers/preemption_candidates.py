"""DefaultPreemption's pure parts: victim importance, the PDB split and the choice among candidate nodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.core.podinfo import PodInfo
from kubesched.plugins.helpers.label_selector import Selector, SelectorError, compile_selector

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_PRIORITY_OFFSET = 2**31  # math.MaxInt32 + 1: makes every priority non-negative in the sum
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Candidate:
    """A node where preempting ``victims`` (most important first) lets the pod fit."""

    node: str
    victims: tuple[PodInfo, ...]
    pdb_violations: int


def start_ns(pod: PodInfo, now_ns: int) -> int:
    """status.startTime in nanoseconds; a pod not started yet (or unreadable time) counts as now (GetPodStartTime)."""
    text = pod.pod.status.start_time
    if not text:
        return now_ns
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return now_ns
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def importance(now_ns: int) -> Callable[[PodInfo], tuple[int, int]]:
    """Sort key, most important first (MoreImportantPod): higher priority, then the earlier start."""
    return lambda p: (-p.priority, start_ns(p, now_ns))


def terminating_by_preemption(pod: PodInfo) -> bool:
    """Being deleted, and its first DisruptionTarget condition says the scheduler preempted it."""
    if pod.pod.metadata.deletion_timestamp is None:
        return False
    for condition in pod.pod.status.conditions or ():
        if condition.type == DISRUPTION_TARGET:
            return condition.status == "True" and condition.reason == PREEMPTION_BY_SCHEDULER
    return False


def _selectors(pdbs: Sequence[PodDisruptionBudget]) -> list[Selector | None]:
    out: list[Selector | None] = []
    for pdb in pdbs:
        try:
            selector = compile_selector(pdb.spec.selector)
        except SelectorError:
            selector = None  # a selector that does not parse matches no pod
        out.append(None if selector is None or selector.empty else selector)  # nil or empty: matches nothing
    return out


def split_by_pdb(pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating), each keeping the order of ``pods`` (filterPodsWithPDBViolation).

    Walking the pods in order, each takes one disruption from every PDB of its namespace that selects
    it (unless already listed in the PDB's disruptedPods); a pod that drives one below 0 is violating.
    """
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    selectors = _selectors(pdbs)
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                selector = selectors[i]
                if pdb.metadata.namespace != pod.namespace or selector is None or not selector.matches(pod.labels):
                    continue
                if pod.name in (pdb.status.disrupted_pods or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def _earliest_start_of_most_important(victims: Sequence[PodInfo], now_ns: int) -> int:
    """GetEarliestPodStartTime: the earliest start among the victims of the highest priority."""
    top = victims[0].priority
    earliest = start_ns(victims[0], now_ns)
    for v in victims:
        if v.priority == top:
            earliest = min(earliest, start_ns(v, now_ns))
        elif v.priority > top:
            top, earliest = v.priority, start_ns(v, now_ns)
    return earliest


def pick_one(candidates: Sequence[Candidate], now_ns: int) -> Candidate:
    """pickOneNodeForPreemption: each rule keeps the best candidates, the next breaks their tie.

    1. fewest PDB violations; 2. lowest priority of the most important victim; 3. smallest sum of
    (priority + 2^31); 4. fewest victims; 5. latest earliest-start among the most important victims;
    6. the first left. Upstream's 6th is a Go map's iteration order, effectively random; here it
    is the candidates' order (non-violating first, then in dry-run order).
    """
    rules: list[Callable[[Candidate], int]] = [
        lambda c: -c.pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + _PRIORITY_OFFSET for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_most_important(c.victims, now_ns),
    ]
    left = list(candidates)
    for rule in rules:
        scores = [rule(c) for c in left]
        best = max(scores)
        left = [c for c, s in zip(left, scores, strict=True) if s == best]
        if len(left) == 1:
            break
    return left[0]
