"""What would help a pending pod: each single change to its spec, and how many nodes it would open.

Never guessed from messages: each change is a new pod spec run through the profile's PreFilter and Filter
again over every node. Changes that open no node are left out; the rest are ranked by nodes opened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import msgspec

from kubesched.api.core import (
    Affinity,
    Container,
    Node,
    PodAffinity,
    PodSpec,
    ResourceRequirements,
    Toleration,
)
from kubesched.core.nodetable import NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.core.quantity import format_milli_cpu
from kubesched.framework.guard import PASS_THROUGH
from kubesched.framework.interfaces import CycleState, NodeBatch
from kubesched.framework.runtime import Framework
from kubesched.scheduler.explain.model import Help

MAX_TAINTS = 32  # distinct taints tried (a cluster with more is summarized by the most common ones)
MAX_OPENED_LISTED = 10

Change = tuple[str, str, PodSpec]  # (what changes, detail, the changed spec)


def what_would_help(
    fw: Framework,
    pod: PodInfo,
    table: NodeTable,
    feasible_now: int,
    nodes: Sequence[Node],
    short: Mapping[str, list[int]] | None = None,
) -> list[Help]:
    """Each change that opens nodes the pod does not fit now, most nodes first. ``short``: per resource, the
    rows some Filter plugin found short of it (``Insufficient <resource>``)."""
    rows = table.ordered_rows()
    names = table.name_array()
    before = set(_feasible(fw, pod, table, rows)) if feasible_now else set()
    found: list[Help] = []
    for change, detail, spec in _changes(pod, table, nodes, short or {}):
        changed = PodInfo(msgspec.structs.replace(pod.pod, spec=spec))
        try:
            after = [r for r in _feasible(fw, changed, table, rows) if r not in before]
        except PASS_THROUGH:  # a plugin failed on the changed pod (an Error status): that change tells nothing
            continue
        if after:
            opened = sorted(str(names[r]) for r in after)
            found.append(Help(change, len(opened), opened[:MAX_OPENED_LISTED], detail))
    found.sort(key=lambda h: (-h.nodes, h.change))
    return found


def _feasible(fw: Framework, pod: PodInfo, table: NodeTable, rows: Rows) -> list[int]:
    got = fw.find_feasible(CycleState(), pod, NodeBatch(table, rows))
    return [int(r) for r in got.feasible.tolist()]


def _changes(pod: PodInfo, table: NodeTable, nodes: Sequence[Node], short: Mapping[str, list[int]]) -> Iterator[Change]:
    spec = pod.pod.spec
    yield from _tolerations(spec, nodes)
    yield from _resources(pod, table, short)
    for key, value in sorted((spec.node_selector or {}).items()):
        rest = {k: v for k, v in (spec.node_selector or {}).items() if k != key}
        yield f"without nodeSelector {key}={value}", "", msgspec.structs.replace(spec, node_selector=rest or None)
    affinity = spec.affinity
    if affinity is not None and affinity.node_affinity is not None:
        na = affinity.node_affinity
        if na.required_during_scheduling_ignored_during_execution is not None:
            relaxed = msgspec.structs.replace(na, required_during_scheduling_ignored_during_execution=None)
            yield (
                "without its required node affinity",
                "",
                _with_affinity(spec, msgspec.structs.replace(affinity, node_affinity=relaxed)),
            )
    yield from _pod_affinity(spec)
    for i, c in enumerate(spec.topology_spread_constraints or ()):
        if c.when_unsatisfiable != "DoNotSchedule":
            continue
        others = [x for j, x in enumerate(spec.topology_spread_constraints or ()) if j != i]
        yield (
            f"without PodTopologySpread maxSkew {c.max_skew} on {c.topology_key}",
            f"topologySpreadConstraints[{i}]",
            msgspec.structs.replace(spec, topology_spread_constraints=others or None),
        )
    ports = [p.host_port for c in spec.containers or () for p in c.ports or () if p.host_port]
    if ports:
        yield (
            f"without hostPort {', '.join(str(p) for p in ports)}",
            "",
            msgspec.structs.replace(spec, containers=[_no_host_ports(c) for c in spec.containers or ()]),
        )


def _tolerations(spec: PodSpec, nodes: Sequence[Node]) -> Iterator[Change]:
    counts: dict[tuple[str, str, str], int] = {}
    for node in nodes:
        for t in node.spec.taints or ():
            if t.effect in ("NoSchedule", "NoExecute"):
                k = (t.key, t.value, t.effect)
                counts[k] = counts.get(k, 0) + 1
        if node.spec.unschedulable:
            k = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
            counts[k] = counts.get(k, 0) + 1
    common = sorted(counts, key=lambda k: (-counts[k], k))[:MAX_TAINTS]
    for key, value, effect in common:
        toleration = (
            Toleration(key=key, operator="Equal", value=value, effect=effect)
            if value
            else Toleration(key=key, operator="Exists", effect=effect)
        )
        shown = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
        yield (
            f"if it tolerated `{shown}`",
            f"on {counts[(key, value, effect)]} node(s)",
            msgspec.structs.replace(spec, tolerations=[*(spec.tolerations or ()), toleration]),
        )


def _resources(pod: PodInfo, table: NodeTable, short: Mapping[str, list[int]]) -> Iterator[Change]:
    """Each requested resource some node is short of, dropped from the pod's requests."""
    spec = pod.pod.spec
    for resource, amount in sorted(pod.requests.items()):
        rows = short.get(resource)
        if amount <= 0 or not rows:
            continue
        most = max(int(table.free(resource)[r]) for r in rows)
        show = _format(resource)
        yield (
            f"without its {resource} request",
            f"asks {show(amount)} {resource}; the {len(rows)} node(s) short of it have at most"
            f" {show(max(most, 0))} free",
            _drop_resource(spec, resource),
        )


def _format(resource: str) -> Callable[[int], str]:
    if resource == "cpu":
        return format_milli_cpu
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return _bytes
    return str


def _bytes(n: int) -> str:
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if (n >= size and n % size == 0) or n >= 10 * size:
            return f"{n / size:.4g}{unit}"
    return str(n)


def _drop_resource(spec: PodSpec, resource: str) -> PodSpec:
    def drop(r: ResourceRequirements | None) -> ResourceRequirements | None:
        if r is None:
            return None
        req = {k: v for k, v in (r.requests or {}).items() if k != resource}
        lim = {k: v for k, v in (r.limits or {}).items() if k != resource}
        return ResourceRequirements(requests=req or None, limits=lim or None)

    def containers(cs: list[Container] | None) -> list[Container] | None:
        return None if cs is None else [msgspec.structs.replace(c, resources=drop(c.resources)) for c in cs]

    overhead = {k: v for k, v in (spec.overhead or {}).items() if k != resource}
    return msgspec.structs.replace(
        spec,
        containers=containers(spec.containers),
        init_containers=containers(spec.init_containers),
        resources=drop(spec.resources),
        overhead=overhead or None,
    )


def _pod_affinity(spec: PodSpec) -> Iterator[Change]:
    affinity = spec.affinity
    if affinity is None:
        return
    for kind in ("podAffinity", "podAntiAffinity"):
        held = affinity.pod_affinity if kind == "podAffinity" else affinity.pod_anti_affinity
        if held is None:
            continue
        terms = held.required_during_scheduling_ignored_during_execution or []
        for i, term in enumerate(terms):
            rest = [t for j, t in enumerate(terms) if j != i] or None
            if isinstance(held, PodAffinity):
                changed = msgspec.structs.replace(
                    affinity,
                    pod_affinity=msgspec.structs.replace(
                        held, required_during_scheduling_ignored_during_execution=rest
                    ),
                )
            else:
                changed = msgspec.structs.replace(
                    affinity,
                    pod_anti_affinity=msgspec.structs.replace(
                        held, required_during_scheduling_ignored_during_execution=rest
                    ),
                )
            yield (
                f"without required {kind} term {i} (topologyKey {term.topology_key})",
                f"{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}]",
                _with_affinity(spec, changed),
            )


def _with_affinity(spec: PodSpec, affinity: Affinity) -> PodSpec:
    return msgspec.structs.replace(spec, affinity=affinity)


def _no_host_ports(c: Container) -> Container:
    if not c.ports:
        return c
    return msgspec.structs.replace(c, ports=[msgspec.structs.replace(p, host_port=0) for p in c.ports])


__all__ = ["what_would_help"]
