"""The differential test's decider over `explain`: kube-scheduler's answers are compared with the explanation's.

The feasible set is every node the explanation marks feasible, the best set the scored nodes of the highest
total, the message, node, nomination and victims those of the real cycle it records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.config.profiles import parse
from kubesched.scheduler.explain.evaluate import Objects, explain
from kubesched.scheduler.explain.model import Explanation
from kubesched.scheduler.memory import Decision, SnapshotDecider, decode_snapshot
from kubesched.scheduler.profiles.manager import Loaded, load
from kubesched.versions import REFERENCE, Release


def decision(ex: Explanation) -> Decision:
    """What `memory.decide` reports, read from an explanation."""
    totals = [n.total for n in ex.nodes if n.total is not None]
    top = max(totals) if totals else None
    p = ex.preemption
    return Decision(
        node=ex.node,
        nominated=p.nominated_node if p is not None else None,
        message=ex.message,
        feasible=tuple(sorted(n.name for n in ex.nodes if n.feasible)),
        best=tuple(sorted(n.name for n in ex.nodes if n.total is not None and n.total == top)),
        victims=tuple(p.victims) if p is not None else (),
    )


def explain_decider(config: Mapping[str, Any] | None = None, release: Release = REFERENCE) -> SnapshotDecider:
    """``decide(scheduler_name, snapshot)`` as `memory.snapshot_decider`, by explaining the snapshot's one
    pending pod."""
    loaded: dict[str, Loaded] = {}

    def run(name: str, snapshot: Mapping[str, Sequence[Mapping[str, Any]]]) -> Decision:
        if name not in loaded:
            document = {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                **(config or {}),
                "profiles": [{"schedulerName": name}],
            }
            loaded[name] = load(parse(document), release=release)
        got = decode_snapshot(snapshot)
        pending = [p for p in got.pods if not p.spec.node_name]
        if len(pending) != 1:
            raise ValueError(f"the snapshot must hold one pending pod, it holds {len(pending)}")
        pod = pending[0].metadata
        objects = Objects(
            got.nodes, got.pods, got.namespaces, got.pdbs, default_selector=got.workloads.default_selector
        )
        ex = asyncio.run(
            explain(loaded[name].build, objects, f"{pod.namespace or 'default'}/{pod.name}", release.version, False)
        )
        return decision(ex)

    return run
