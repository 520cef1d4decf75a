"""Small builders for scheduling tests: nodes and pods from plain dicts, tables, batches, verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.core.nodetable import NodeTable, table_of
from kubesched.core.podinfo import PodInfo, compile_pod
from kubesched.framework.interfaces import NodeBatch
from kubesched.framework.status import Status, Verdicts


def make_node(
    name: str,
    *,
    alloc: Mapping[str, str | int] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
) -> Node:
    """A node; allocatable defaults to cpu 4, memory 8Gi, pods 110."""
    spec: dict[str, Any] = {"unschedulable": unschedulable, "taints": [dict(t) for t in taints]}
    return msgspec.convert(
        {
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec,
            "status": {
                "allocatable": dict(alloc if alloc is not None else {"cpu": "4", "memory": "8Gi", "pods": "110"})
            },
        },
        Node,
    )


def make_pod(name: str = "p", *, requests: Mapping[str, str | int] | None = None, **spec: Any) -> PodInfo:
    """A compiled pod; ``spec`` keys are PodSpec's camelCase names. ``requests`` makes one container."""
    spec = dict(spec)
    if requests is not None:
        spec.setdefault("containers", []).append({"name": "c", "resources": {"requests": dict(requests)}})
    pod = msgspec.convert({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}, Pod)
    return compile_pod(pod)


def make_table(nodes: Sequence[Node], pods: Mapping[str, Sequence[PodInfo]] | None = None) -> NodeTable:
    """A table of ``nodes`` in order, with ``pods`` (by node name) counted against them."""
    table = table_of(nodes)
    for node_name, on_node in (pods or {}).items():
        for pod in on_node:
            table.add_pod(table.index[node_name], pod)
    return table


def batch(table: NodeTable) -> NodeBatch:
    """Every live row of the table."""
    return NodeBatch(table, table.rows())


def results(verdicts: Verdicts) -> list[Status | None]:
    """Per node: None when it passed, else its failing status."""
    return [verdicts.statuses[c - 1] if c else None for c in verdicts.codes.tolist()]
