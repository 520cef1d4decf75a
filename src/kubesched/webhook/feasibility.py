"""Could this pod ever be scheduled? The scheduler's own Filter plugins over every node, with no pods counted.

The node cache given here holds nodes only (the webhook never feeds it pods), so NodeResourcesFit
compares requests with allocatable and the answer does not depend on what runs at the moment.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import msgspec

from kubesched.api.core import Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.core.podinfo import compile_pod
from kubesched.framework.interfaces import CycleState, NodeBatch
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.plugins import in_tree
from kubesched.webhook.review import AdmissionRequest
from kubesched.webhook.rules import Action, Phase, PodJSON, Verdict, scheduler_of

log = logging.getLogger("kubesched.webhook")

# Upstream's order, so a node rejected for several reasons reports the same first one as kube-scheduler.
PLUGINS = ("NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit")


class FeasibilityChecker:
    """The placement filters of the default profile, run over a node cache without pods."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        self.framework = Framework.build(ProfileSpec(plugins=tuple(PluginRef(p) for p in PLUGINS)), in_tree())

    def why_not(self, pod: Pod) -> str | None:
        """kube-scheduler's "0/N nodes are available: …" when no node could ever take the pod, else None.

        None too when no node is known: with nothing to judge against, nothing is refused.
        """
        table = self.cache.table
        if not len(table):
            return None
        outcome = self.framework.find_feasible(CycleState(), compile_pod(pod), NodeBatch(table, table.rows()))
        if len(outcome.feasible):
            return None
        return outcome.diagnosis.message(len(table))


@dataclass(frozen=True)
class Feasibility:
    """Deny or warn when a pod of ``scheduler_names`` (empty: any) can never fit on any node."""

    name: str
    checker: FeasibilityChecker
    action: Action
    scheduler_names: frozenset[str] = frozenset()
    phase: Phase = "validate"

    def __call__(self, pod: PodJSON, request: AdmissionRequest) -> Verdict | None:
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            return None  # placed by its author: the scheduler never sees it
        if self.scheduler_names and scheduler_of(pod) not in self.scheduler_names:
            return None
        try:
            reason = self.checker.why_not(msgspec.convert(pod, Pod))
        except (ValueError, msgspec.ValidationError) as err:
            # The API server validates the pod too; a bad quantity is its message to give, not ours.
            log.info("feasibility of %s/%s not judged: %s", request.namespace, request.name, err)
            return Verdict.warn(f"feasibility not checked: {err}")
        if reason is None:
            return None
        return Verdict.act(self.action, f"pod can never be scheduled: {reason}")
