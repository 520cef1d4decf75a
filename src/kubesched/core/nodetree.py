"""kube-scheduler's node tree: the node table's rows per zone, in the order nodes came, zones in the order first seen.

`ordered_rows` interleaves the zones (the first node of each zone, then the second of each...), so the share of
nodes a cycle looks at spans the zones, as kube-scheduler's nodeTree.list does
(pkg/scheduler/backend/cache/node_tree.go).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api.core import Node


def zone_key(node: Node) -> str:
    """kube-scheduler's GetZoneKey: region and zone (beta labels first), "" when neither is set."""
    labels: Any = node.metadata.labels
    if not labels:
        return ""
    zone = labels.get("failure-domain.beta.kubernetes.io/zone")
    if zone is None:
        zone = labels.get("topology.kubernetes.io/zone") or ""
    region = labels.get("failure-domain.beta.kubernetes.io/region")
    if region is None:
        region = labels.get("topology.kubernetes.io/region") or ""
    return f"{region}:\x00:{zone}" if region or zone else ""


class NodeTree:
    """Rows by zone key; the interleaved order is computed once per change."""

    __slots__ = ("_order", "_zone_of", "_zones")

    def __init__(self) -> None:
        self._zones: dict[str, list[int]] = {}
        self._zone_of: dict[int, str] = {}
        self._order: npt.NDArray[np.intp] | None = None

    def ordered_rows(self) -> npt.NDArray[np.intp]:
        if self._order is None:
            lists = list(self._zones.values())
            order = [zone[i] for i in range(max(map(len, lists), default=0)) for zone in lists if i < len(zone)]
            self._order = np.asarray(order, dtype=np.intp)
        return self._order

    def place(self, row: int, node: Node) -> None:
        """Put ``row`` in its node's zone (at the end of it when the zone changed or the row is new)."""
        zone = zone_key(node)
        if self._zone_of.get(row) == zone:
            return
        self.leave(row)
        self._zones.setdefault(zone, []).append(row)
        self._zone_of[row] = zone
        self._order = None

    def leave(self, row: int) -> None:
        zone = self._zone_of.pop(row, None)
        if zone is not None:
            rows = self._zones[zone]
            rows.remove(row)
            if not rows:
                del self._zones[zone]
            self._order = None
