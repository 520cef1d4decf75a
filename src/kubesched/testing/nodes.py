"""Fake Node manifests: what a kubelet would have registered, minus the kubelet.

Nothing heartbeats, evicts or taints these nodes (no kubelet, no kube-controller-manager, and
TaintNodesByCondition is disabled), so they stay exactly as written. Nodes files: ``nodes_file``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_ALLOCATABLE: Mapping[str, str] = {"cpu": "8", "memory": "32Gi", "pods": "110"}


def node_manifest(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
) -> dict[str, Any]:
    """The Node object to POST; hostname/os/arch labels are added unless given (workloads often select on them)."""
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    all_labels.update(labels or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": all_labels}, "spec": spec}


def node_status(
    name: str, *, allocatable: Mapping[str, str] | None = None, capacity: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A merge patch for ``nodes/<name>/status``: capacity, allocatable (``pods`` must be > 0) and Ready=True."""
    alloc = dict(allocatable if allocatable is not None else DEFAULT_ALLOCATABLE)
    if "pods" not in alloc:
        alloc["pods"] = DEFAULT_ALLOCATABLE["pods"]  # with 0 pods allowed nothing can ever schedule here
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def condition(kind: str, status: str, reason: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": "fake node (kubesched test harness)",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return {
        "status": {
            "capacity": dict(capacity if capacity is not None else alloc),
            "allocatable": alloc,
            "conditions": [
                condition("Ready", "True", "KubeletReady"),
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID"),
            ],
            "addresses": [{"type": "Hostname", "address": name}],
        }
    }
