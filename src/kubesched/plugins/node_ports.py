"""NodePorts: a pod's host ports must be free on the node."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.core.nodetable import NodeTable
from kubesched.core.podinfo import HostPort, PodInfo
from kubesched.framework.events import NODE_ADD, POD_DELETE, ClusterEventWithHint
from kubesched.framework.interfaces import (
    CycleState,
    FilterPlugin,
    NodeBatch,
    PreFilterPlugin,
    PreFilterResult,
    SignFragments,
    SignPlugin,
)
from kubesched.framework.status import SKIP, Status, Verdicts

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
ALL_IPS = "0.0.0.0"
_WANTS_PORTS = PreFilterResult()
_NO_PORTS = PreFilterResult(SKIP)


def conflicts(wanted: tuple[HostPort, ...], used: set[HostPort]) -> bool:
    """Whether any wanted port clashes with a used one (HostPortInfo.CheckConflict).

    0.0.0.0 clashes with the same protocol and port on any IP; a specific IP clashes with itself and 0.0.0.0.
    """
    for want in wanted:
        if want.ip == ALL_IPS:
            if any(u.protocol == want.protocol and u.port == want.port for u in used):
                return True
        elif want in used or HostPort(ALL_IPS, want.protocol, want.port) in used:
            return True
    return False


class NodePorts(PreFilterPlugin, FilterPlugin, SignPlugin):
    """PreFilter skips pods without host ports; Filter fails nodes where a wanted host port is taken."""

    name: ClassVar[str] = "NodePorts"
    node_fields = NodeFields()
    _status = Status.unschedulable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added, or a pod gone that may have held a port (upstream: Pod Delete, Node Add)."""
        return [ClusterEventWithHint(POD_DELETE), ClusterEventWithHint(NODE_ADD)]

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        return _WANTS_PORTS if pod.host_ports else _NO_PORTS

    def sign(self, pod: PodInfo) -> SignFragments:
        return (("hostPorts", pod.host_ports),)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        table, rows = nodes.table, nodes.rows
        failed = np.zeros(len(rows), dtype=np.bool_)
        if pod.host_ports:
            # Only rows whose pods use some host port can conflict; usually few.
            for i in np.flatnonzero(table.requested("#hostports")[rows]).tolist():
                failed[i] = conflicts(pod.host_ports, set(table.used_host_ports(int(rows[i]))))
        return Verdicts.from_mask(failed, self._status)
