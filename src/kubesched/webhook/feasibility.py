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
from kubesched.webhook.rules import Action, Phase, PodJSON, Verdict, pod_fields, scheduler_of

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
        judged = self.judge(pod)
        return None if judged is None else judged[0]

    def judge(self, pod: Pod) -> tuple[str, list[str]] | None:
        """`why_not`'s message and the plugins that rejected nodes (in the profile's order), or None."""
        table = self.cache.table
        if not len(table):
            return None
        outcome = self.framework.find_feasible(CycleState(), compile_pod(pod), NodeBatch(table, table.rows()))
        if len(outcome.feasible):
            return None
        diagnosis = outcome.diagnosis
        named = {rej.plugin or s.plugin for rej in diagnosis.rejections for s in rej.statuses}
        if diagnosis.pre_filter is not None:
            named.add(diagnosis.pre_filter.plugin)
        return diagnosis.message(len(table)), [p for p in PLUGINS if p in named]


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
            judged = self.checker.judge(msgspec.convert(pod, Pod))
        except (ValueError, msgspec.ValidationError) as err:
            # The API server validates the pod too; a bad quantity is its message to give, not ours.
            log.info("Feasibility not judged", extra={**pod_fields(request, pod), "rule": self.name, "err": str(err)})
            return Verdict.warn(f"feasibility not checked: {err}")
        if judged is None:
            return None
        reason, plugins = judged
        fields = {**pod_fields(request, pod), "plugin": ",".join(plugins), "rule": self.name}
        log.info("Pod can never be scheduled", extra=fields)
        return Verdict.act(self.action, f"pod can never be scheduled: {reason}")
