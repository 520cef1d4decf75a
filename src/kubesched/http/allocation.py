"""Per-node allocation of managed resources, read from a node table when scraped (nothing paid per request).

Named as kube-state-metrics names node resources (``kube_node_status_allocatable{node,resource,unit}``)
under the component's prefix: ``<prefix>_node_resource_allocatable`` and ``<prefix>_node_resource_requested``.
Cardinality is bounded: only the resources given (the managed ones), only the nodes the table holds now
(a deleted node's series are gone at the next scrape).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubesched.core.nodetable import NodeTable

_BYTES = ("memory", "ephemeral-storage", "storage")


def unit_of(resource: str) -> str:
    """kube-state-metrics' unit label: core for cpu, byte for memory and storage (hugepages too), else integer."""
    if resource == "cpu":
        return "core"
    if resource in _BYTES or resource.startswith("hugepages-"):
        return "byte"
    return "integer"


class NodeAllocation(Collector):
    """Gauges of allocatable and (when the table counts pods) requested amounts per node and resource."""

    def __init__(
        self, prefix: str, table: Callable[[], NodeTable], resources: Sequence[str], requested: bool = True
    ) -> None:
        self.prefix = prefix
        self.table = table
        self.resources = tuple(dict.fromkeys(resources))
        self.requested = requested

    def collect(self) -> Iterator[Metric]:
        cap = GaugeMetricFamily(
            f"{self.prefix}_node_resource_allocatable",
            "Allocatable amount of a managed resource on a node (status.allocatable), by node, resource and unit.",
            labels=["node", "resource", "unit"],
        )
        used = GaugeMetricFamily(
            f"{self.prefix}_node_resource_requested",
            "Amount of a managed resource requested by the pods counted on a node, by node, resource and unit.",
            labels=["node", "resource", "unit"],
        )
        table = self.table()
        names = table.names
        rows = [row for row, _ in table.live_nodes()]
        for resource in self.resources:
            unit = unit_of(resource)
            scale = 1000 if resource == "cpu" else 1  # the table counts cpu in millicores
            total = table.allocatable(resource).tolist()
            taken = table.requested(resource).tolist() if self.requested else None
            for row in rows:
                labels = [names[row], resource, unit]
                cap.add_metric(labels, total[row] / scale)
                if taken is not None:
                    used.add_metric(labels, taken[row] / scale)
        yield cap
        if self.requested:
            yield used
