"""DefaultPreemption (PostFilter): find lower-priority pods whose eviction lets an unschedulable pod fit.

The algorithm of kube-scheduler v1.35.4 (default_preemption.go, preemption/preemption.go):

1. eligibility: ``preemptionPolicy: Never``, or a lower-priority pod already terminating by
   preemption on the pod's nominated node, ends here;
2. potential nodes: those whose Filter status is Unschedulable (not UnschedulableAndUnresolvable);
3. dry run, from a random offset, until enough candidates: on the node table itself, remove every
   lower-priority pod of the node, re-run the profile's Filter plugins on that one row, then reprieve
   the pods (PDB-violating ones first, most important first) that still let the pod fit; the rest
   are the victims. The table is always restored;
4. the extenders hook may trim the candidates; then the best candidate is chosen (six rules).

Its Filter plugins run through the profile's framework, ``handle.framework`` (a `DryRunFramework`, set
once the profile is built). Plugins whose PreFilter precomputes counts over pods (PodTopologySpread,
InterPodAffinity) implement ``add_pod``/``remove_pod`` (upstream's PreFilter extensions, `PreFilterExtensions`),
which the framework runs so the dry run updates a clone of their cycle state.

PostFilter is synchronous and eviction is not: ``post_filter`` returns (nominated node, status) and
keeps the choice in ``state["DefaultPreemption"]``; the scheduler then awaits ``evict(state, pod)``.

Nominated pods come from ``handle.nominator`` (the scheduler's): in the dry run, those at
least as important as the pod count on their node as in the scheduling cycle (both filter passes,
with and without them); pods of lower priority nominated to the chosen node lose their nomination
(their room is being taken).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec
import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.guard import FrameworkError
from kubesched.framework.handle import DryRunFramework
from kubesched.framework.handle import VictimsMap as VictimsMap
from kubesched.framework.interfaces import (
    ClusterAPI,
    ClusterAPIError,
    CycleState,
    Handle,
    NodeBatch,
    PostFilterPlugin,
    PreEnqueuePlugin,
)
from kubesched.framework.interfaces import PreFilterExtensions as PreFilterExtensions
from kubesched.framework.status import SUCCESS, Code, Status
from kubesched.plugins.helpers.preemption_candidates import (
    Candidate,
    importance,
    pick_one,
    split_by_pdb,
    terminating_by_preemption,
)

ERR_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_TERMINATING = "not eligible due to a terminating pod on the nominated node."
ERR_NOT_HELPFUL = "Preemption is not helpful for scheduling"
ERR_NO_VICTIMS = "No preemption victims found for incoming pod"
ERR_NO_CANDIDATE = "no candidate node for preemption"
ERR_WAITING = "waiting for the preemption for this pod to be finished"


class DefaultPreemptionArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


def validate_args(args: DefaultPreemptionArgs) -> list[str]:
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    errors = []
    if not 0 <= pct <= 100:
        errors.append(f"minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]")
    if absolute < 0:
        errors.append(f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        both = "cannot be zero at the same time as"
        errors.append(f"minCandidateNodesPercentage: Invalid value: 0: {both} minCandidateNodesAbsolute")
        errors.append(f"minCandidateNodesAbsolute: Invalid value: 0: {both} minCandidateNodesPercentage")
    return errors


@dataclass(frozen=True)
class Preemption:
    """The choice of one PostFilter run, kept in the cycle state for `evict`."""

    node: str
    victims: tuple[PodInfo, ...]


def clone_state(state: CycleState) -> CycleState:
    """CycleState.Clone: every value with a ``clone`` method is copied, the rest shared."""
    out = CycleState()
    out.skip_filter = set(state.skip_filter)
    out.skip_score = set(state.skip_score)
    for key, value in state.items():
        clone = getattr(value, "clone", None)
        out[key] = clone() if callable(clone) else value
    return out


def _aggregate(messages: Sequence[str]) -> str:
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin):
    """PostFilter: choose a node and victims; PreEnqueue: hold the pod back while its victims are evicted."""

    name: ClassVar[str] = "DefaultPreemption"
    Args: ClassVar[type | None] = DefaultPreemptionArgs
    node_fields = NodeFields()

    def __init__(self, args: DefaultPreemptionArgs | None = None, handle: Handle | None = None) -> None:
        args = args or DefaultPreemptionArgs()
        super().__init__(args, handle)
        errors = validate_args(args)
        if errors:
            raise ValueError("; ".join(errors))
        self.percentage = args.min_candidate_nodes_percentage
        self.absolute = args.min_candidate_nodes_absolute
        # Where the dry run starts among the potential nodes (upstream: rand.Int31n); tests replace it.
        self.random_offset: Callable[[int], int] = random.randrange
        self.now_ns: Callable[[], int] = time.time_ns
        self._evicting: set[str] = set()

    def num_candidates(self, nodes: int) -> int:
        """calculateNumCandidates: a percentage of the potential nodes, at least the absolute number, at most all."""
        return min(nodes, max(nodes * self.percentage // 100, self.absolute))

    # ---- PreEnqueue ------------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        return Status.unresolvable(ERR_WAITING) if pod.uid in self._evicting else SUCCESS

    # ---- PostFilter ------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Any
    ) -> tuple[str | None, Status]:
        """(nominated node: None keeps the pod's, "" clears it; status), every message prefixed `preemption: `."""
        state.pop(self.name, None)
        nominated, status = self._preempt(state, pod, table, diagnosis)
        if status.message:
            status = Status(status.code, (f"preemption: {status.message}",))
        return nominated, status

    def _preempt(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> tuple[str | None, Status]:
        status_of = self._statuses(table, diagnosis)
        if pod.pod.spec.preemption_policy == "Never":
            return None, Status.unschedulable(ERR_NEVER)
        if self._preempting_already(pod, table, status_of):
            return None, Status.unschedulable(ERR_TERMINATING)
        if not len(table):
            return None, Status.error("no nodes available")
        potential = [row for row in table.rows().tolist() if status_of(row).code == Code.UNSCHEDULABLE]
        if not potential:
            return "", Status.unschedulable(self._fit_error(table, []))
        framework = self.handle.framework
        if framework is None:
            return None, Status.error("no framework to dry-run preemption with: handle.framework is not set")
        cluster = self.handle.cluster
        pdbs = list(cluster.pdbs()) if cluster is not None else []
        now = self.now_ns()
        candidates, failures = self._dry_run(framework, state, pod, table, potential, pdbs, now)
        if not candidates:
            errors = [s.message for _, s in failures if s.code == Code.ERROR]
            if errors:
                return None, Status.error(_aggregate(errors))
            return "", Status.unschedulable(self._fit_error(table, failures))
        trimmed = self._call_extenders(pod, candidates)
        if isinstance(trimmed, Status):
            return None, trimmed
        if not trimmed:
            return None, Status.unschedulable(ERR_NO_CANDIDATE)
        best = trimmed[0] if len(trimmed) == 1 else pick_one(trimmed, now)
        state[self.name] = Preemption(best.node, best.victims)
        if self.handle.release.preemption_success_says_where:
            where = f"found a potential placement for pod on node {best.node}, preempting {len(best.victims)} victims"
            return best.node, Status(Code.SUCCESS, (where,))
        return best.node, SUCCESS

    @staticmethod
    def _statuses(table: NodeTable, diagnosis: Diagnosis) -> Callable[[int], Status]:
        """A node's Filter status; nodes without one get the absent status (default: unresolvable)."""
        if diagnosis.pre_filter is not None:
            rejected = diagnosis.pre_filter
            return lambda row: rejected
        explicit = dict(diagnosis.items())
        absent = diagnosis.absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return lambda row: explicit.get(row, absent)

    def _preempting_already(self, pod: PodInfo, table: NodeTable, status_of: Callable[[int], Status]) -> bool:
        """A lower-priority pod on the nominated node is already terminating by preemption (unless unresolvable)."""
        row = table.index.get(pod.pod.status.nominated_node_name) if pod.pod.status.nominated_node_name else None
        if row is None or status_of(row).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return False
        return any(p.priority < pod.priority and terminating_by_preemption(p) for p in table.pods_on(row).values())

    @staticmethod
    def _fit_error(table: NodeTable, failures: Sequence[tuple[int, Status]]) -> str:
        """FitError over the dry run: nodes not tried share "Preemption is not helpful for scheduling"."""
        diagnosis = Diagnosis(absent=Status.unresolvable(ERR_NOT_HELPFUL))
        distinct = list(dict.fromkeys(s for _, s in failures))
        if failures:
            rows = np.array([r for r, _ in failures], dtype=np.intp)
            codes = np.array([distinct.index(s) + 1 for _, s in failures], dtype=np.int32)
            diagnosis.add(rows, codes, tuple(distinct))
        return diagnosis.message(len(table))

    # ---- dry run ---------------------------------------------------------------------------------

    def _dry_run(
        self,
        framework: DryRunFramework,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        potential: list[int],
        pdbs: Sequence[PodDisruptionBudget],
        now: int,
    ) -> tuple[list[Candidate], list[tuple[int, Status]]]:
        """DryRunPreemption, one node after the other: candidates (non-violating first) and failures."""
        n = len(potential)
        offset, wanted = self.random_offset(n), self.num_candidates(n)
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        failures: list[tuple[int, Status]] = []
        for i in range(n):
            row = potential[(offset + i) % n]
            victims, violations, status = self.select_victims(framework, state, pod, table, row, pdbs, now)
            if status.ok and victims:
                found = Candidate(table.names[row], tuple(victims), violations)
                (violating if violations else non_violating).append(found)
                if non_violating and len(non_violating) + len(violating) >= wanted:
                    break
                continue
            if status.ok:
                status = Status.error(f'expected at least one victim pod on node "{table.names[row]}"')
            failures.append((row, status))
        return non_violating + violating, failures

    def select_victims(
        self,
        framework: DryRunFramework,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        row: int,
        pdbs: Sequence[PodDisruptionBudget],
        now: int,
    ) -> tuple[list[PodInfo], int, Status]:
        """SelectVictimsOnNode on the table's row: (victims most important first, PDB violations, status)."""
        original = list(table.pods_on(row).values())
        lower = [p for p in original if p.priority < pod.priority]
        if not lower:
            return [], 0, Status.unresolvable(ERR_NO_VICTIMS)
        copy = clone_state(state)
        one = NodeBatch(table, np.array([row], dtype=np.intp))
        # Pods nominated here, at least as important and not there yet, count in the first filter pass.
        nominator = self.handle.nominator
        ahead = [
            p
            for p in (nominator.on(table.names[row]) if nominator is not None else ())
            if p.priority >= pod.priority and p.uid != pod.uid and p.uid not in table.pods_on(row)
        ]

        def remove(p: PodInfo) -> None:
            table.remove_pod(row, p.uid)
            framework.run_pre_filter_extension_remove_pod(copy, pod, p, table, row)

        def add(p: PodInfo) -> None:
            table.add_pod(row, p)
            framework.run_pre_filter_extension_add_pod(copy, pod, p, table, row)

        def filtered() -> Status:
            diagnosis = Diagnosis()
            if len(framework.run_filter(copy, pod, one, diagnosis)):
                return SUCCESS
            return next(diagnosis.items())[1]

        def fits() -> Status:
            """RunFilterPluginsWithNominatedPods: with the nominated pods counted, then without them."""
            if not ahead:
                return filtered()
            for p in ahead:
                add(p)
            try:
                status = filtered()
            finally:
                for p in ahead:
                    remove(p)
            return filtered() if status.ok else status

        try:
            for p in lower:
                remove(p)
            status = fits()
            if not status.ok:
                return [], 0, status
            lower.sort(key=importance(now))
            violating, non_violating = split_by_pdb(lower, pdbs)
            victims: list[PodInfo] = []
            violations = 0
            # Reprieve as many as possible: PDB-violating pods first, each group most important first.
            for group, counts in ((violating, 1), (non_violating, 0)):
                for p in group:
                    add(p)
                    if not fits().ok:
                        remove(p)
                        victims.append(p)
                        violations += counts
            if violating and non_violating:
                victims.sort(key=importance(now))
            return victims, violations, SUCCESS
        except FrameworkError as err:
            return [], 0, err.status
        finally:
            present = table.pods_on(row)
            for p in original:
                if p.uid not in present:
                    table.add_pod(row, p)

    async def _clear_lower_nominations(self, cluster: ClusterAPI, pod: PodInfo, node: str) -> None:
        """Pods of lower priority nominated to ``node`` lose the nomination (getLowerPriorityNominatedPods)."""
        nominator = self.handle.nominator
        if nominator is None:
            return
        for other in nominator.on(node):
            if other.priority < pod.priority and other.uid != pod.uid:
                nominator.remove(other.uid)
                await cluster.set_nominated_node(other, "")

    def _call_extenders(self, pod: PodInfo, candidates: list[Candidate]) -> list[Candidate] | Status:
        """The scheduler's extenders (``handle.preempt_extenders``) may trim the candidates."""
        extenders = self.handle.preempt_extenders
        if extenders is None:
            return candidates
        try:
            trimmed = extenders(pod, {c.node: (list(c.victims), c.pdb_violations) for c in candidates})
        except ClusterAPIError as err:
            return Status.error(str(err))
        for node, (victims, _) in trimmed.items():
            if not victims:
                return Status.error(f'expected at least one victim pod on node "{node}"')
        return [Candidate(node, tuple(victims), violations) for node, (victims, violations) in trimmed.items()]

    # ---- acting on the choice --------------------------------------------------------------------

    def victims(self, state: CycleState) -> int | None:
        chosen = state.get(self.name)
        return len(chosen.victims) if isinstance(chosen, Preemption) else None

    async def after_nomination(self, state: CycleState, pod: PodInfo) -> Status:
        return await self.evict(state, pod)

    async def evict(self, state: CycleState, pod: PodInfo) -> Status:
        """Preempt the victims chosen by `post_filter` (concurrently), but those already terminating.

        The pod's own nomination is not written here: the scheduler's failure report carries it (one
        status patch with the PodScheduled condition, as kube-scheduler's handleSchedulingFailure).
        """
        chosen = state.get(self.name)
        if not isinstance(chosen, Preemption):
            return Status.error("no preemption chosen in this cycle")
        cluster = self.handle.cluster
        if cluster is None:
            return Status.error("no cluster to preempt on")
        self._evicting.add(pod.uid)
        try:
            await self._clear_lower_nominations(cluster, pod, chosen.node)
            # A victim whose graceful deletion has started gets no call (no condition, no second DELETE, no
            # event), as kube-scheduler's prepareCandidate: it is leaving anyway.
            staying = [v for v in chosen.victims if v.pod.metadata.deletion_timestamp is None]
            results = await asyncio.gather(
                *(cluster.evict(v, pod, chosen.node) for v in staying), return_exceptions=True
            )
            for result in results:
                if isinstance(result, ClusterAPIError):
                    return Status.error(str(result))
                if isinstance(result, BaseException):
                    raise result
        except ClusterAPIError as err:
            return Status.error(str(err))
        finally:
            self._evicting.discard(pod.uid)
        return SUCCESS
