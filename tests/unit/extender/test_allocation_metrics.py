"""Per-node allocation of managed resources: kube-state-metrics' shape, bounded to managed resources and live nodes."""

from __future__ import annotations

import msgspec
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.extender.app import Dispatcher
from kubesched.http.allocation import NodeAllocation, unit_of
from kubesched.http.exposition import render
from kubesched.webhook.metrics import WebhookMetrics

from .conftest import RES
from .test_reservations import SMALL, bind, bound_service, burst, filter_

ALLOC = "kubesched_extender_node_resource_allocatable"
REQ = "kubesched_extender_node_resource_requested"


def _series(text: str, name: str) -> dict[tuple[str, str, str], float]:
    return {
        (s.labels["node"], s.labels["resource"], s.labels["unit"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def _node(name: str, allocatable: dict[str, str]) -> Node:
    return msgspec.convert({"metadata": {"name": name}, "status": {"allocatable": allocatable}}, Node)


def test_units_as_kube_state_metrics() -> None:
    assert unit_of("cpu") == "core"
    assert unit_of("memory") == "byte"
    assert unit_of("ephemeral-storage") == "byte"
    assert unit_of("hugepages-2Mi") == "byte"
    assert unit_of("nvidia.com/gpu") == "integer"


async def test_extender_exports_requested_and_allocatable_per_node() -> None:
    svc, _ = bound_service()
    text = Dispatcher(svc).metrics.render().decode()
    alloc = _series(text, ALLOC)
    assert alloc[(SMALL, RES, "integer")] == 2
    assert alloc[("n-big", RES, "integer")] == 8
    assert _series(text, REQ)[(SMALL, RES, "integer")] == 0
    p = burst(1)[0]
    filter_(svc, p)
    assert await bind(svc, p) == ""
    # A reservation counts at once, before the watch reports the pod bound.
    text = Dispatcher(svc).metrics.render().decode()
    assert _series(text, REQ)[(SMALL, RES, "integer")] == 1
    # Only managed resources: the nodes' cpu, memory, pods are no series of ours.
    assert {r for _, r, _ in _series(text, ALLOC)} == {RES}


def test_deleted_node_leaves_the_gauges() -> None:
    cache = ClusterCache()
    cache.replace_nodes([_node("a", {"cpu": "1500m", "example.com/gpu": "4"}), _node("b", {"cpu": "2"})])
    registry = CollectorRegistry()
    registry.register(NodeAllocation("t", lambda: cache.table, ["cpu", "example.com/gpu"]))
    text = render(registry).decode()
    alloc = _series(text, "t_node_resource_allocatable")
    assert alloc[("a", "cpu", "core")] == 1.5  # cores, as kube-state-metrics: the table counts millicores
    assert alloc[("b", "example.com/gpu", "integer")] == 0
    cache.delete_node("a")
    text = render(registry).decode()
    assert {n for n, _, _ in _series(text, "t_node_resource_allocatable")} == {"b"}
    assert {n for n, _, _ in _series(text, "t_node_resource_requested")} == {"b"}


def test_webhook_exports_allocatable_without_pods() -> None:
    cache = ClusterCache()
    cache.replace_nodes([_node("a", {"example.com/gpu": "4"})])
    metrics = WebhookMetrics()
    metrics.follow_allocation(lambda: cache.table, ["example.com/gpu"], requested=False)
    text = metrics.render().decode()
    assert _series(text, "kubesched_webhook_node_resource_allocatable") == {("a", "example.com/gpu", "integer"): 4}
    assert "kubesched_webhook_node_resource_requested" not in text
    assert "kubesched_webhook_node_resource" not in WebhookMetrics().render().decode()  # none managed: none
