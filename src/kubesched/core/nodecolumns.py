"""How a Node's and a pod's fields become the numbers of the node table's columns.

Allocatable quantities parsed into int64 columns (in C when they are plain integers), the usage a pod adds to
a column (``#pods``, ``#hostports``, non-zero CPU and memory, requests), which Node changes recompute a row's
static columns. `NodeTable` (nodetable.py) uses them.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api.core import Node
from kubesched.core.podinfo import PodInfo
from kubesched.core.quantity import MAX_AMOUNT, QuantityError, resource_value


def parse_column(values: list[Any], resource: str) -> npt.NDArray[np.int64]:
    """Quantities (None for absent) as an int64 column, in C when they are all plain integers."""
    try:
        col = np.array(["0" if v is None else v for v in values]).astype(np.int64)
    except (ValueError, TypeError, OverflowError):
        pass
    else:
        return np.minimum(col, MAX_AMOUNT) if len(col) and col.max() > MAX_AMOUNT else col
    out = np.zeros(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if v is not None:
            with contextlib.suppress(QuantityError):
                out[i] = resource_value(resource, v)
    return out


def cpu_column(values: list[Any]) -> list[int]:
    out = []
    for v in values:
        try:
            out.append(0 if v is None else resource_value("cpu", v))
        except QuantityError:
            out.append(0)  # as alloc_of counts it
    return out


def alloc_of(node: Node, resource: str) -> int:
    alloc = node.status.allocatable
    if not alloc or resource not in alloc:
        return 0
    try:
        return resource_value(resource, alloc[resource])
    except QuantityError:
        return 0


def static_fields_differ(a: Node, b: Node) -> bool:
    return (
        a.metadata.labels != b.metadata.labels
        or a.spec.unschedulable != b.spec.unschedulable
        or a.spec.taints != b.spec.taints
        or a.status.allocatable != b.status.allocatable
        or a.status.images != b.status.images
        or a.status.declared_features != b.status.declared_features
    )


def usage_key(resource: str) -> str:
    """The usage column that counts against a resource's allocatable."""
    return "#pods" if resource == "pods" else resource


def alloc_key(usage_key: str) -> str:
    return "pods" if usage_key == "#pods" else usage_key


def pod_usage(pod: PodInfo, key: str) -> int:
    if key == "#pods":
        return 1
    if key == "#hostports":
        return len(pod.host_ports)
    if key == "nonzero:cpu":
        return pod.non_zero_cpu
    if key == "nonzero:memory":
        return pod.non_zero_memory
    return pod.requests.get(key, 0)
