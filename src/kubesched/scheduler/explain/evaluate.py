"""One pod through a fresh in-memory scheduler, every node and every plugin recorded.

The real cycle (`Scheduler.schedule_one`, as `scheduler run --cluster` runs it) decides the node, writes
the FitError message and runs preemption; before it, on the same cache and framework, the framework is
asked for each node's first failing plugin (what kube-scheduler reports), every Filter plugin's verdict
on every node (kube-scheduler stops at the first), and the scores of the nodes kube-scheduler would score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
import numpy as np

from kubesched.api.core import Namespace, Node, Pod
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.resources import ResourceObjects
from kubesched.cluster.volumes import VolumeObjects
from kubesched.core.nodetable import NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.errors import KubeschedError
from kubesched.framework.build import Profile
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.exhaustive import each_filter, each_pre_filter
from kubesched.framework.guard import FrameworkError
from kubesched.framework.handle import DefaultSelector
from kubesched.framework.interfaces import CycleState, Handle, NodeBatch
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.scheduler.engine import search
from kubesched.scheduler.engine.built import Built
from kubesched.scheduler.engine.cycle import find, num_feasible_nodes_to_find
from kubesched.scheduler.engine.extenders import ExtenderError, ExtendersFactory, NoExtenders, no_extenders
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.explain.helps import what_would_help
from kubesched.scheduler.explain.model import (
    Explanation,
    NodeExplanation,
    Preemption,
    PreFilterStep,
    Sample,
    Score,
    Verdict,
    code_name,
)
from kubesched.scheduler.memory import MemoryCluster


class ExplainError(KubeschedError):
    """The pod cannot be explained: it is not in the cluster, or no profile schedules it."""


@dataclass
class Objects:
    """What the scheduler reads of a cluster (a cluster file's or a snapshot's objects)."""

    nodes: Sequence[Node]
    pods: Sequence[Pod]
    namespaces: Sequence[Namespace] = ()
    pdbs: Sequence[PodDisruptionBudget] = ()
    default_selector: DefaultSelector | None = None
    volumes: VolumeObjects | None = None
    resources: ResourceObjects | None = field(default=None)


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def pick(pods: Sequence[Pod], wanted: str) -> tuple[Pod, list[Pod], str | None, int]:
    """The pod to explain (pending, as if never bound), the other pods, the node it is bound to, and how many
    of the others are pending too. Raises ExplainError naming the pods there are."""
    key = wanted if "/" in wanted else f"default/{wanted}"
    target = next((p for p in pods if _key(p) == key), None)
    if target is None:
        name = key.split("/", 1)[1]
        same = sorted(_key(p) for p in pods if p.metadata.name == name)
        pending = sorted(_key(p) for p in pods if not p.spec.node_name)
        hint = (
            f"; pods of that name: {', '.join(same)}"
            if same
            else f"; pending pods: {', '.join(pending[:10])}{' …' if len(pending) > 10 else ''}"
            if pending
            else "; the cluster has no pending pod"
        )
        raise ExplainError(f"no pod {key} in the cluster ({len(pods)} pods){hint}")
    bound_to = target.spec.node_name or None
    if bound_to is not None:  # explained as the cycle that placed it would have seen the cluster
        target = msgspec.structs.replace(target, spec=msgspec.structs.replace(target.spec, node_name=""))
    others = [p for p in pods if _key(p) != key]
    waiting = sum(1 for p in others if not p.spec.node_name)
    return target, others, bound_to, waiting


async def explain(
    build: Callable[[Callable[[str], Handle]], Built],
    objects: Objects,
    wanted: str,
    kubernetes_version: str,
    helps: bool = True,
    extenders: ExtendersFactory = no_extenders,
) -> Explanation:
    """Explain pod ``wanted`` (``NAMESPACE/NAME``) on ``objects`` with the configuration ``build`` builds;
    ``extenders`` makes the client of the extenders it names (`offline.ReadOnlyExtenders`: never their bind)."""
    target, others, bound_to, skipped = pick(objects.pods, wanted)
    cluster = MemoryCluster(
        objects.nodes,
        [*others, target],
        objects.pdbs,
        objects.namespaces,
        volumes=objects.volumes,
        resources=objects.resources,
    )
    scheduler = Scheduler(
        ClusterCache(),
        cluster,
        build,
        clock=ManualClock(),
        batching=False,
        default_selector=objects.default_selector,
        volumes=cluster.volumes,
        resources=cluster.resources,
        extenders=extenders,
    )
    cluster.attach(scheduler)
    notes = []
    if skipped:
        notes.append(f"{skipped} other pending pod(s) not scheduled first: the pod is explained as the next one")
    entry = scheduler.queue.pop()
    uid = cluster_uid(cluster, target)
    while entry is not None and entry.info.uid != uid:  # the others wait (nominated ones still count)
        entry = scheduler.queue.pop()
    key = f"{target.metadata.namespace or 'default'}/{target.metadata.name}"
    if entry is None:
        reason = next((p.reason for p in cluster.placements() if p.pod == key), None) or "not attempted"
        return Explanation(
            pod=key,
            kubernetes_version=kubernetes_version,
            profile=target.spec.scheduler_name,
            node=None,
            message=reason,
            bound_to=bound_to,
            notes=notes,
        )
    profile = scheduler.built.profiles[entry.profile]
    fw, pod, table = profile.framework, entry.info, scheduler.cache.table
    out = Explanation(
        pod=key,
        kubernetes_version=kubernetes_version,
        profile=profile.name,
        node=None,
        message="",
        bound_to=bound_to,
        notes=notes,
    )
    state = CycleState()
    narrowed, feasible, reported, failed = _filter(scheduler, profile, state, pod)
    out.pre_filter = _pre_filter_steps(fw, pod, table)
    out.filter_plugins = [plugin.name for plugin in fw.filter]
    rows = table.ordered_rows()
    names = table.name_array()
    percentage = profile.percentage_of_nodes_to_score
    pct = scheduler.cycle.percentage if percentage is None else percentage
    k = num_feasible_nodes_to_find(len(narrowed), pct, bool(fw.score)) if len(narrowed) else 0
    sampled = feasible[:k]
    extended = await _extenders(scheduler, pod, feasible, reported, failed, out.notes)
    if extended is not None:  # kube-scheduler's extenders filter the sample the plugins found
        passed = set(extended.tolist())
        feasible = extended
        sampled = np.array([r for r in sampled.tolist() if r in passed], dtype=np.intp)
    out.sample = Sample(pct, k, len(feasible))
    scores = _scores(fw, state, pod, NodeBatch(table, sampled)) if len(sampled) else {}
    if len(sampled) and scheduler.extenders.prioritizers(pod):
        extra = await scheduler.extenders.prioritize(pod, table, sampled)
        for r in sampled.tolist():
            value = extra.get(str(names[r]), 0)
            scores[int(r)].append(Score("extenders", value, value, 1, value))
    feasible_set = set(feasible.tolist())
    for r in rows.tolist():
        status = reported.get(r)
        node_scores = scores.get(r, ())
        out.nodes.append(
            NodeExplanation(
                str(names[r]),
                r in feasible_set,
                _verdict(status) if status is not None else None,
                _with_reported(failed.get(r, []), status),
                r in scores,
                list(node_scores),
                sum(s.weighted for s in node_scores) if r in scores else None,
            )
        )
    await scheduler.schedule_one(entry)
    await scheduler.drain()
    after = cluster.pods.get(pod.uid)
    out.node = (after.spec.node_name or None) if after is not None else None
    condition = cluster.conditions.get(pod.key)
    out.message = condition[1] if condition is not None and out.node is None else ""
    nominated = (after.status.nominated_node_name or None) if after is not None else None
    victims = sorted(e.regarding for e in cluster.events if e.reason == "Preempted")
    if nominated or victims:
        out.preemption = Preemption(nominated, victims)
    _margin(out)
    if helps and out.node is None:
        out.help = what_would_help(fw, pod, table, len(feasible), objects.nodes, _short(failed))
    return out


def cluster_uid(cluster: MemoryCluster, target: Pod) -> str:
    """The UID the in-memory cluster gave ``target`` (a pod of a file may have none)."""
    key = _key(target)
    return next((uid for uid, p in cluster.pods.items() if _key(p) == key), "")


def _filter(
    scheduler: Scheduler, profile: Profile, state: CycleState, pod: PodInfo
) -> tuple[Rows, Rows, dict[int, Status], dict[int, list[Verdict]]]:
    """PreFilter and Filter over every node as the cycle runs them (`Cycle._find`'s steps: nominated pods of
    at least the pod's priority counted on their nodes, then the second pass without them), and every Filter
    plugin over the nodes PreFilter left: the rows left, the feasible rows, each rejected row's reported
    status, every plugin failing each row."""
    fw, table = profile.framework, scheduler.cache.table
    rows = table.ordered_rows()
    diagnosis = Diagnosis()
    added: dict[int, list[PodInfo]] = {}
    with search.nominated_pods(scheduler.cache, scheduler.nominator, table, pod, added):
        pre = fw.run_pre_filter(state, pod, table)
        if pre.status.rejected:
            return rows[:0], rows[:0], {int(r): pre.status for r in rows.tolist()}, {}
        narrowed = pre.narrow(table, rows, Diagnosis())
        feasible, _ = find(profile, state, pod, table, pre, diagnosis, NoExtenders(), 100, 0)
        failed = _every_filter(fw, state, pod, NodeBatch(table, narrowed)) if len(narrowed) else {}
    if added:
        feasible = search.second_pass(fw, pod, table, feasible, added, diagnosis)
    reported = dict(diagnosis.items())
    if diagnosis.absent is not None:  # narrowed away by PreFilter: no Filter plugin ran there
        for r in np.setdiff1d(rows, narrowed).tolist():
            reported.setdefault(int(r), diagnosis.absent)
    return narrowed, feasible, reported, failed


async def _extenders(
    scheduler: Scheduler,
    pod: PodInfo,
    feasible: Rows,
    reported: dict[int, Status],
    failed: dict[int, list[Verdict]],
    notes: list[str],
) -> Rows | None:
    """The filter extenders' verdicts on every feasible node (kube-scheduler asks them about its sample):
    the rows they pass, their rejections added to ``reported`` and ``failed``; None when none filters."""
    ext = scheduler.extenders
    if not len(feasible) or not ext.filters(pod):
        return None
    table = scheduler.cache.table
    names = table.name_array()
    try:
        passed, statuses = await ext.filter(pod, table, names[feasible].tolist())
    except ExtenderError as err:  # the cycle fails the pod with it too (its message is the FitError's)
        notes.append(f"a filter extender failed: {err}")
        return None
    for name, status in statuses.items():
        row = table.index.get(name)
        if row is not None:
            reported[row] = status
            failed.setdefault(row, []).append(_verdict(status))
    keep = set(passed)
    return np.array([r for r in feasible.tolist() if str(names[r]) in keep], dtype=np.intp)


def _with_reported(failed: list[Verdict], status: Status | None) -> list[Verdict]:
    """Every failing plugin, the reported one among them (it may fail only with nominated pods counted)."""
    if status is None or status.code == 0 or any(v.plugin == status.plugin for v in failed):
        return failed
    return [_verdict(status), *failed]


def _short(failed: dict[int, list[Verdict]]) -> dict[str, list[int]]:
    """Per resource, the rows a Filter plugin found short of it (kube-scheduler's "Insufficient <name>")."""
    out: dict[str, list[int]] = {}
    for row, verdicts in failed.items():
        for v in verdicts:
            for reason in v.reason.split(", "):
                if reason.startswith("Insufficient "):
                    out.setdefault(reason.removeprefix("Insufficient "), []).append(row)
    return out


def _verdict(status: Status) -> Verdict:
    return Verdict(status.plugin, code_name(status.code), status.message)


def _pre_filter_steps(fw: Framework, pod: PodInfo, table: NodeTable) -> list[PreFilterStep]:
    """Each PreFilter plugin's verdict on its own, and the nodes it narrows to."""
    steps = []
    for name, result in each_pre_filter(fw, pod, table):
        if isinstance(result, FrameworkError):
            steps.append(PreFilterStep(name, "Error", str(result)))
            continue
        nodes = sorted(result.node_names) if result.node_names is not None else None
        steps.append(PreFilterStep(name, code_name(result.status.code), result.status.message, nodes))
    return steps


def _every_filter(fw: Framework, state: CycleState, pod: PodInfo, batch: NodeBatch) -> dict[int, list[Verdict]]:
    """Every Filter plugin over every node PreFilter left (kube-scheduler stops at a node's first failure)."""
    out: dict[int, list[Verdict]] = {}
    for name, verdicts in each_filter(fw, state, pod, batch):
        if verdicts.all_passed:
            continue
        failed = verdicts.failed if verdicts.failed is not None else verdicts.codes != 0
        statuses = [_verdict(s.with_plugin(name)) for s in verdicts.statuses]
        for row, code in zip(batch.rows[failed].tolist(), verdicts.codes[failed].tolist(), strict=True):
            out.setdefault(int(row), []).append(statuses[code - 1])
    return out


def _scores(fw: Framework, state: CycleState, pod: PodInfo, batch: NodeBatch) -> dict[int, list[Score]]:
    """Raw, normalized and weighted scores per Score plugin on the nodes kube-scheduler scores."""
    work = state.clone()
    fw.run_pre_score(work, pod, batch)
    scores = fw.run_score(work, pod, batch)
    raw, normalized = scores.raw, scores.normalized
    out: dict[int, list[Score]] = {int(r): [] for r in batch.rows.tolist()}
    for (plugin, weight), r_scores, n_scores in zip(fw.score, raw, normalized, strict=True):
        if r_scores is None or n_scores is None:
            continue
        for i, row in enumerate(batch.rows.tolist()):
            n = int(n_scores[i])
            out[int(row)].append(Score(plugin.name, int(r_scores[i]), n, weight, n * weight))
    return out


def _margin(out: Explanation) -> None:
    """The runner-up of the chosen node and by how much the chosen one led."""
    if out.node is None:
        return
    totals = {n.name: n.total for n in out.nodes if n.total is not None}
    mine = totals.pop(out.node, None)
    if mine is None or not totals:
        return
    runner = max(sorted(totals), key=lambda name: totals[name] or 0)
    out.runner_up = runner
    out.margin = mine - (totals[runner] or 0)
