"""DynamicResources through the scheduler (in memory): claims by name and by template, allocation at PreBind,
waiting pods released by the objects they wait for, kube-scheduler v1.35.4's messages."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import Node, Pod
from kubesched.api.resource_v1 import FINALIZER, AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.resources import ResourceObjects
from kubesched.config.profiles import parse
from kubesched.core.podinfo import compile_pod
from kubesched.framework.interfaces import ClusterAPIError, CycleState, Handle
from kubesched.framework.status import Code
from kubesched.plugins import in_tree
from kubesched.plugins.dynamic_resources import DynamicResources
from kubesched.scheduler.engine.queue import ManualClock
from kubesched.scheduler.engine.scheduler import Scheduler
from kubesched.scheduler.memory import MemoryCluster, run_until_settled
from kubesched.scheduler.profiles.manager import build
from kubesched.testing.builders import batch, make_table
from kubesched.versions import parse_release

DRIVER = "gpu.example.com"
CONFIG = parse({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"})


def node(name: str) -> Node:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return msgspec.convert(
        {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": {"allocatable": alloc}}, Node
    )


def gpu_class(name: str = "gpu") -> DeviceClass:
    sel = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    return msgspec.convert({"metadata": {"name": name}, "spec": {"selectors": sel}}, DeviceClass)


def gpus(node_name: str, *models: str) -> ResourceSlice:
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(models)]
    spec = {
        "driver": DRIVER,
        "nodeName": node_name,
        "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
        "devices": devices,
    }
    return msgspec.convert({"metadata": {"name": f"{node_name}-gpus"}, "spec": spec}, ResourceSlice)


def claim(name: str, model: str | None = None, cls: str = "gpu", **status: Any) -> ResourceClaim:
    req: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}
    if model:
        req["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    body = {
        "metadata": {"name": name, "namespace": "default", "uid": f"claim-{name}", "resourceVersion": "1"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": req}]}},
        "status": status,
    }
    return msgspec.convert(body, ResourceClaim)


def pod(name: str, *claims: str, template: str | None = None, **status: Any) -> Pod:
    refs: list[dict[str, Any]] = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    if template:
        refs.append({"name": "t", "resourceClaimTemplateName": template})
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}], "resourceClaims": refs}
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec, "status": status}, Pod
    )


class World:
    def __init__(self, nodes: list[Node], pods: list[Pod], resources: ResourceObjects) -> None:
        self.resources = resources
        self.cluster = MemoryCluster(nodes, pods, resources=resources)
        self.clock = ManualClock()
        self.scheduler = Scheduler(
            ClusterCache(), self.cluster, lambda mh: build(CONFIG, in_tree(), mh), clock=self.clock, resources=resources
        )
        self.cluster.attach(self.scheduler)

    async def settle(self) -> dict[str, str | None]:
        await run_until_settled(self.scheduler, self.clock)
        return {p.pod: p.node or p.reason for p in self.cluster.placements()}


async def test_a_claim_satisfiable_on_one_node_lands_there_and_its_allocation_is_written() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10"), gpus("n2", "h100")], [claim("big", "h100")])
    world = World([node("n1"), node("n2")], [pod("trainer", "big")], res)
    assert await world.settle() == {"default/trainer": "n2"}
    stored = res.claim("default", "big")
    assert stored is not None and stored.status.allocation is not None
    results = stored.status.allocation.devices.results or []
    assert [(r.request, r.driver, r.pool, r.device) for r in results] == [("gpu", DRIVER, "n2", "gpu-0")]
    assert [(r.resource, r.name, r.uid) for r in stored.status.reserved_for or []] == [
        ("pods", "trainer", "uid-trainer")
    ]
    assert FINALIZER in (stored.metadata.finalizers or [])


async def test_the_device_of_an_allocated_claim_is_not_given_to_another() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10")], [claim("one"), claim("two")])
    world = World([node("n1"), node("n2")], [pod("first", "one"), pod("second", "two")], res)
    got = await world.settle()
    assert got["default/first"] == "n1"
    assert got["default/second"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


async def test_a_shared_claim_already_allocated_brings_its_next_pod_to_the_same_node() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10"), gpus("n2", "a10")], [claim("shared")])
    world = World([node("n1"), node("n2")], [pod("a", "shared")], res)
    first = (await world.settle())["default/a"]
    world.scheduler.pod_upserted(pod("b", "shared"))
    world.cluster.pending.append("default/b")
    world.cluster.pods["uid-b"] = pod("b", "shared")
    assert (await world.settle())["default/b"] == first
    stored = res.claim("default", "shared")
    assert stored is not None and [r.name for r in stored.status.reserved_for or []] == ["a", "b"]


async def test_a_pod_naming_a_missing_claim_waits_with_kube_scheduler_s_reason_until_it_exists() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10")], [])
    world = World([node("n1")], [pod("p", "later")], res)
    assert await world.settle() == {"default/p": 'could not find ResourceClaim "default/later"'}
    res.on_change = world.scheduler.resources_changed
    res.upsert_claim(claim("later"))  # the watch sees it created: the pod is let through PreEnqueue
    assert await world.settle() == {"default/p": "n1"}


async def test_a_template_claim_waits_for_the_resourceclaim_controller() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10")], [])
    world = World([node("n1")], [pod("p", template="gpu-template")], res)
    assert await world.settle() == {"default/p": 'pod "default/p": ResourceClaim not created yet'}


def test_a_generated_claim_must_be_owned_by_the_pod() -> None:
    res = ResourceObjects([gpu_class()], [], [claim("p-t-x")])
    plugin = DynamicResources(handle=Handle(resources=res))
    status = {"resourceClaimStatuses": [{"name": "t", "resourceClaimName": "p-t-x"}]}
    got = plugin.pre_enqueue(compile_pod(pod("p", template="gpu-template", **status)))
    assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert got.message == "ResourceClaim default/p-t-x was not created for pod default/p (pod is not owner)"


async def test_a_missing_device_class_is_unresolvable_until_it_is_created() -> None:
    res = ResourceObjects([], [gpus("n1", "a10")], [claim("c", cls="nope")])
    world = World([node("n1")], [pod("p", "c")], res)
    assert await world.settle() == {
        # PreFilter stopped before it kept the claims: upstream's PostFilter sees none (v1.37: no reason).
        "default/p": "0/1 nodes are available: request gpu: device class nope does not exist."
        " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    }
    res.on_change = world.scheduler.resources_changed
    res.upsert_class(gpu_class("nope"))
    assert await world.settle() == {"default/p": "n1"}


async def test_a_broken_selector_fails_the_pod_with_the_cel_error() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10")], [claim("c", model='x" ==')])
    world = World([node("n1")], [pod("p", "c")], res)
    reason = (await world.settle())["default/p"]
    assert reason is not None and reason.startswith(
        'running "DynamicResources" filter plugin: claim default/c: selector #0: CEL compile error:'
        " compilation failed: ERROR: <input>:1:"
    ), reason


@pytest.mark.parametrize(("version", "reason"), [("1.35", "no new claims to deallocate"), ("1.37", "")])
def test_pods_without_claims_skip_the_plugin_and_get_the_releases_post_filter_reason(version: str, reason: str) -> None:
    plugin = DynamicResources(handle=Handle(resources=ResourceObjects(), release=parse_release(version)))
    info = compile_pod(
        msgspec.convert({"metadata": {"name": "x", "uid": "x"}, "spec": {"containers": [{"name": "c"}]}}, Pod)
    )
    state = CycleState()
    assert plugin.pre_filter(state, info, make_table([])).status.code == Code.SKIP
    assert (
        plugin.pre_enqueue(info).ok
        and plugin.sign(info) == ()
        and plugin.pre_bind_pre_flight(state, info, "n").code == Code.SKIP
    )
    nominated, status = plugin.post_filter(state, info, make_table([]), None)  # type: ignore[arg-type]
    assert (nominated, status.code, status.message) == (None, Code.UNSCHEDULABLE, reason)
    # Its PreFilter never ran (an earlier PreFilter rejected the pod): upstream's state read fails, "not found".
    nominated, status = plugin.post_filter(CycleState(), info, make_table([]), None)  # type: ignore[arg-type]
    assert (status.code, status.message) == (Code.ERROR, "not found")


def test_a_pod_with_claims_is_not_signable() -> None:
    assert DynamicResources().sign(compile_pod(pod("p", "c"))) is None


@pytest.mark.parametrize("served", [False, True])
def test_a_cluster_without_the_api_refuses_claims_clearly(served: bool) -> None:
    plugin = DynamicResources(handle=Handle(resources=ResourceObjects(served=served)))
    status = plugin.pre_enqueue(compile_pod(pod("p", "c")))
    suffix = "" if served else " (the cluster does not serve resource.k8s.io/v1)"
    assert status.message == f'could not find ResourceClaim "default/c"{suffix}'


async def test_a_failed_claim_write_at_prebind_sends_the_pod_back_and_the_retry_binds_it() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10")], [claim("c")])
    calls: list[str] = []

    async def flaky(c: ResourceClaim, allocation: Any, pod_info: Any) -> ResourceClaim:
        calls.append(c.metadata.name)
        if len(calls) == 1:
            raise ClusterAPIError("connection reset by peer")
        res.writer = None
        return await res.reserve(c, allocation, pod_info)

    res.writer = flaky
    world = World([node("n1")], [pod("p", "c")], res)
    assert await world.settle() == {"default/p": "n1"}
    assert calls == ["c", "c"]  # the first write failed: Unreserve freed the devices, the retry allocated again
    stored = res.claim("default", "c")
    assert stored is not None and [r.name for r in stored.status.reserved_for or []] == ["p"]
    pre_bind = world.scheduler.built.profiles["default-scheduler"].framework.pre_bind
    dra = next(p for p in pre_bind if isinstance(p, DynamicResources))
    assert not dra.pending


def test_a_claim_whose_allocation_is_in_flight_makes_its_other_pods_wait() -> None:
    res = ResourceObjects([gpu_class()], [gpus("n1", "a10")], [claim("shared")])
    plugin = DynamicResources(handle=Handle(resources=res))
    table = make_table([])
    first, second = compile_pod(pod("a", "shared")), compile_pod(pod("b", "shared"))
    state = CycleState()
    assert plugin.pre_filter(state, first, table).status.ok
    state["DynamicResources"].node_allocations["n1"] = [msgspec.convert({"devices": {}}, AllocationResult)]
    assert plugin.reserve(state, first, "n1").ok  # chosen, not yet written
    got = plugin.pre_filter(CycleState(), second, table).status
    assert (got.code, got.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resource claim default/shared is in the process of being allocated",
    )
    plugin.unreserve(state, first, "n1")
    assert plugin.pre_filter(CycleState(), second, table).status.ok


def test_the_first_available_alternative_scores_higher_and_claimless_pods_skip_scoring() -> None:
    small = msgspec.convert(
        {
            "metadata": {"name": "s1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "d", "attributes": {"size": {"int": 1}}}],
            },
        },
        ResourceSlice,
    )
    big = msgspec.convert(
        {
            "metadata": {"name": "s2"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n2",
                "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "d", "attributes": {"size": {"int": 8}}}],
            },
        },
        ResourceSlice,
    )
    sel = [{"cel": {"expression": f'device.attributes["{DRIVER}"].size > 4'}}]
    req = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "selectors": sel},
            {"name": "any", "deviceClassName": "gpu"},
        ],
    }
    c = msgspec.convert(
        {"metadata": {"name": "c", "namespace": "default", "uid": "cu"}, "spec": {"devices": {"requests": [req]}}},
        ResourceClaim,
    )
    plugin = DynamicResources(handle=Handle(resources=ResourceObjects([gpu_class()], [small, big], [c])))
    table = make_table([node("n1"), node("n2")])
    nodes = batch(table)
    state, info = CycleState(), compile_pod(pod("p", "c"))
    assert plugin.pre_filter(state, info, table).status.ok
    assert plugin.filter(state, info, nodes).codes.tolist() == [0, 0]
    assert plugin.pre_score(state, info, nodes).ok
    raw = plugin.score(state, info, nodes)
    assert raw.tolist() == [7, 8]  # upstream: 8 - index of the subrequest chosen
    assert plugin.normalize(state, info, nodes, raw).tolist() == [87, 100]
    plain = compile_pod(msgspec.convert({"metadata": {"name": "x", "uid": "x"}, "spec": {}}, Pod))
    assert plugin.pre_score(CycleState(), plain, nodes).code == Code.SKIP
