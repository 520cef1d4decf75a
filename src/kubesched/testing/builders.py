"""Nodes and pods for tests, in the three forms tests need them.

* ``node_json`` / ``pod_json``: plain dicts as the API server sends them (extender and webhook bodies,
  `--cluster` files); ``pod_manifest``: a pod to POST to a real API server (with an image, no uid).
* ``make_node`` / ``make_pod_object``: the typed wire objects (``Node``, ``Pod``).
* ``make_pod``: a compiled ``PodInfo``, what plugins and the scheduling cycle see; ``table_of`` (a
  ``NodeTable`` of ``Node`` objects), ``make_table`` (the same with pods on the nodes), ``batch`` and
  ``results`` for running plugins over a node table.

Spec and metadata keys are the API's camelCase names; only the common ones have keywords.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.core.nodetable import NodeTable, table_of
from kubesched.core.podinfo import PodInfo, compile_pod
from kubesched.framework.interfaces import NodeBatch
from kubesched.framework.status import Status, Verdicts

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
DEFAULT_ALLOCATABLE: Mapping[str, str] = {"cpu": "4", "memory": "8Gi", "pods": "110"}

Quantities = Mapping[str, str | int]


def node_json(
    name: str,
    *,
    alloc: Quantities | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    capacity: Quantities | None = None,
    images: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A node with its status; allocatable defaults to cpu 4, memory 8Gi, pods 110 (capacity to allocatable).

    ``images`` maps image names to their size in bytes (as the kubelet reports them).
    """
    allocatable = {k: str(v) for k, v in (alloc if alloc is not None else DEFAULT_ALLOCATABLE).items()}
    status: dict[str, Any] = {
        "allocatable": allocatable,
        "capacity": {k: str(v) for k, v in capacity.items()} if capacity is not None else dict(allocatable),
    }
    if images:
        status["images"] = [{"names": [image], "sizeBytes": size} for image, size in images.items()]
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec, "status": status}


def make_node(name: str, **kw: Any) -> Node:
    """The typed ``Node`` of ``node_json(name, **kw)``."""
    return msgspec.convert(node_json(name, **kw), Node)


def _container(
    requests: Quantities | None, limits: Quantities | None, image: str | None, ports: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c"}
    if image is not None:
        container["image"] = image
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = {k: str(v) for k, v in requests.items()}
    if limits is not None:
        resources["limits"] = {k: str(v) for k, v in limits.items()}
    if resources:
        container["resources"] = resources
    if ports:
        container["ports"] = [dict(p) for p in ports]
    return container


def pod_json(
    name: str = "p",
    *,
    namespace: str = "default",
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    requests: Quantities | None = None,
    limits: Quantities | None = None,
    image: str | None = None,
    node_name: str | None = None,
    priority: int | None = None,
    meta: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod; ``uid`` defaults to ``uid-<name>``. ``requests``, ``limits`` or ``image`` add one container
    named "c" (after any ``containers`` given); other keywords are PodSpec fields (``nodeSelector=…``)."""
    body = dict(spec)
    if requests is not None or limits is not None or image is not None:
        body["containers"] = [*body.get("containers", ()), _container(requests, limits, image, ())]
    if node_name is not None:
        body["nodeName"] = node_name
    if priority is not None:
        body["priority"] = priority
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid if uid is not None else f"uid-{name}"}
    if labels is not None:
        metadata["labels"] = dict(labels)
    metadata.update(meta or {})
    return {"metadata": metadata, "spec": body, "status": dict(status or {})}


def make_pod_object(name: str = "p", **kw: Any) -> Pod:
    """The typed ``Pod`` of ``pod_json(name, **kw)``."""
    return msgspec.convert(pod_json(name, **kw), Pod)


def make_pod(name: str = "p", **kw: Any) -> PodInfo:
    """The compiled pod of ``pod_json(name, **kw)``, as plugins see it."""
    return compile_pod(make_pod_object(name, **kw))


def pod_manifest(
    name: str,
    *,
    namespace: str | None = None,
    scheduler: str | None = None,
    labels: Mapping[str, str] | None = None,
    requests: Quantities | None = None,
    limits: Quantities | None = None,
    priority_class: str | None = None,
    image: str = PAUSE_IMAGE,
    **spec: Any,
) -> dict[str, Any]:
    """A pod as clients send it to the API server: one pause container "c", no uid; ``namespace`` only when
    given (a POST takes it from the URL)."""
    body: dict[str, Any] = {"containers": [_container(requests, limits, image, ())], **spec}
    if scheduler is not None:
        body["schedulerName"] = scheduler
    if priority_class is not None:
        body["priorityClassName"] = priority_class
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}


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


__all__ = [
    "DEFAULT_ALLOCATABLE",
    "PAUSE_IMAGE",
    "batch",
    "make_node",
    "make_pod",
    "make_pod_object",
    "make_table",
    "node_json",
    "pod_json",
    "pod_manifest",
    "results",
    "table_of",
]
