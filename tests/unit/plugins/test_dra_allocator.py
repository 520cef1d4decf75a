"""The structured allocator: modes, classes' and requests' selectors, constraints, pools, admin access."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import Node
from kubesched.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.plugins.helpers.dra_allocator import Allocator
from kubesched.plugins.helpers.dra_cel import SelectorCache
from kubesched.plugins.helpers.dra_pools import AllocationError, DeviceID, FailedOnNode, allocated_devices, gather_pools

DRIVER = "gpu.example.com"


def node(name: str, **labels: str) -> Node:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Node)


def dclass(name: str = "gpu", *exprs: str) -> DeviceClass:
    sels = [{"cel": {"expression": e}} for e in exprs or (f'device.driver == "{DRIVER}"',)]
    return msgspec.convert({"metadata": {"name": name}, "spec": {"selectors": sels}}, DeviceClass)


def device(name: str, **attrs: Any) -> dict[str, Any]:
    typed = {
        k: ({"string": v} if isinstance(v, str) else {"bool": v} if isinstance(v, bool) else {"int": v})
        for k, v in attrs.items()
    }
    return {"name": name, "attributes": typed}


def rslice(
    name: str,
    devices: list[dict[str, Any]],
    *,
    node_name: str | None = "n1",
    pool: str = "",
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> ResourceSlice:
    where: dict[str, Any] = {"nodeName": node_name} if node_name else {}
    body = {
        "driver": DRIVER,
        "pool": {"name": pool or node_name or "shared", "generation": generation, "resourceSliceCount": count},
        "devices": devices,
        **where,
        **spec,
    }
    return msgspec.convert({"metadata": {"name": name}, "spec": body}, ResourceSlice)


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    return msgspec.convert({"metadata": meta, "spec": {"devices": devices}}, ResourceClaim)


def exactly(name: str = "req", count: int = 1, mode: str = "ExactCount", *exprs: str, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": more.pop("cls", "gpu"), "allocationMode": mode, "count": count, **more}
    if exprs:
        body["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    return {"name": name, "exactly": body}


def allocator(
    slices: list[ResourceSlice], classes: list[DeviceClass] | None = None, allocated: set[DeviceID] | None = None
) -> Allocator:
    by_name = {c.metadata.name: c for c in classes or [dclass()]}
    return Allocator(by_name.get, slices, allocated or set(), SelectorCache())


def picked(results: Any) -> list[list[str]]:
    return [[f"{r.request}={r.device}" for r in a.devices.results or []] for a in results]


def test_exact_count_picks_free_devices_in_slice_order_and_names_the_node() -> None:
    alloc = allocator([rslice("s", [device("g0"), device("g1"), device("g2")])], allocated={(DRIVER, "n1", "g0")})
    results = alloc.allocate(node("n1"), [claim("c", exactly(count=2))])
    assert results is not None and picked(results) == [["req=g1", "req=g2"]]
    selector = results[0].node_selector
    assert selector is not None and selector.node_selector_terms is not None
    assert msgspec.to_builtins(selector.node_selector_terms[0]) == {
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]
    }


def test_not_enough_devices_is_none_and_another_node_s_slice_does_not_count() -> None:
    slices = [rslice("s1", [device("g0")]), rslice("s2", [device("g0"), device("g1")], node_name="n2")]
    assert allocator(slices).allocate(node("n1"), [claim("c", exactly(count=2))]) is None
    assert picked(allocator(slices).allocate(node("n2"), [claim("c", exactly(count=2))]) or []) == [
        ["req=g0", "req=g1"]
    ]


def test_class_and_request_selectors_both_apply() -> None:
    slices = [rslice("s", [device("g0", model="a10"), device("g1", model="h100"), device("g2", model="h100")])]
    cls = dclass("gpu", f'device.driver == "{DRIVER}"', f'device.attributes["{DRIVER}"].model != "a10"')
    req = exactly("r", 1, "ExactCount", f'device.attributes["{DRIVER}"].model == "h100"')
    results = allocator(slices, [cls]).allocate(node("n1"), [claim("c", req)])
    assert picked(results or []) == [["r=g1"]]


def test_all_mode_takes_every_matching_device_or_none() -> None:
    slices = [rslice("s", [device("g0"), device("g1")])]
    assert picked(allocator(slices).allocate(node("n1"), [claim("c", exactly(mode="All"))]) or []) == [
        ["req=g0", "req=g1"]
    ]
    taken = allocator(slices, allocated={(DRIVER, "n1", "g1")})
    assert taken.allocate(node("n1"), [claim("c", exactly(mode="All"))]) is None
    none = allocator([rslice("s", [device("x")])], [dclass("gpu", "false")])
    assert none.allocate(node("n1"), [claim("c", exactly(mode="All"))]) is None


def test_two_claims_of_one_pod_do_not_share_a_device() -> None:
    slices = [rslice("s", [device("g0"), device("g1")])]
    results = allocator(slices).allocate(node("n1"), [claim("a", exactly()), claim("b", exactly())])
    assert picked(results or []) == [["req=g0"], ["req=g1"]]
    assert (
        allocator([rslice("s", [device("g0")])]).allocate(node("n1"), [claim("a", exactly()), claim("b", exactly())])
        is None
    )


def test_match_attribute_constraint_backtracks() -> None:
    slices = [rslice("s", [device("g0", numa=0), device("g1", numa=1), device("g2", numa=1)])]
    c = claim("c", exactly(count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    assert picked(allocator(slices).allocate(node("n1"), [c]) or []) == [["req=g1", "req=g2"]]
    lonely = [rslice("s", [device("g0", numa=0), device("g1", numa=1)])]
    assert allocator(lonely).allocate(node("n1"), [c]) is None


def test_first_available_takes_the_first_subrequest_that_fits() -> None:
    slices = [rslice("s", [device("small", size=1)])]
    req = {
        "name": "r",
        "firstAvailable": [
            {
                "name": "big",
                "deviceClassName": "gpu",
                "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].size > 1'}}],
            },
            {"name": "any", "deviceClassName": "gpu"},
        ],
    }
    assert picked(allocator(slices).allocate(node("n1"), [claim("c", req)]) or []) == [["r/any=small"]]


def test_admin_access_may_use_an_allocated_device() -> None:
    alloc = allocator([rslice("s", [device("g0")])], allocated={(DRIVER, "n1", "g0")})
    results = alloc.allocate(node("n1"), [claim("c", exactly(adminAccess=True))])
    assert results is not None and results[0].devices.results is not None
    assert results[0].devices.results[0].admin_access is True


def test_slices_for_all_nodes_and_by_node_selector() -> None:
    everywhere = rslice("e", [device("g0")], node_name=None, pool="p", allNodes=True)
    selected = rslice(
        "z",
        [device("z0")],
        node_name=None,
        pool="zone",
        nodeSelector={
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        },
    )
    assert [p.name for p in gather_pools([everywhere, selected], node("x", zone="a"))] == ["p", "zone"]
    assert [p.name for p in gather_pools([everywhere, selected], node("y", zone="b"))] == ["p"]


@pytest.mark.parametrize(
    ("label", "operator", "bound", "selected"),
    [
        ("1000", "Gt", "5", True),
        ("3", "Lt", "5", True),
        # Go's strconv.ParseInt reads neither; Python's int() read both (the copy DRA used to keep did).
        ("1_000", "Gt", "5", False),
        ("7", "Gt", " 5", False),
        ("+7", "Gt", "5", True),
        ("99999999999999999999", "Gt", "5", False),  # beyond int64
    ],
)
def test_slice_node_selectors_read_gt_lt_as_node_affinity_does(
    label: str, operator: str, bound: str, selected: bool
) -> None:
    """One node-selector evaluator (core.nodeaffinity): a slice's Gt/Lt follow Go's ParseInt."""
    term = {"matchExpressions": [{"key": "gpus", "operator": operator, "values": [bound]}]}
    sel = rslice("s", [device("g0")], node_name=None, pool="p", nodeSelector={"nodeSelectorTerms": [term]})
    assert [p.name for p in gather_pools([sel], node("x", gpus=label))] == (["p"] if selected else [])


def test_pools_keep_the_newest_generation_and_know_when_they_are_incomplete_or_invalid() -> None:
    old = rslice("old", [device("g0")], generation=1)
    new = rslice("new", [device("g1")], generation=2, count=2)
    (pool,) = gather_pools([old, new], node("n1"))
    assert [s.metadata.name for s in pool.slices] == ["new"] and pool.incomplete
    with pytest.raises(
        AllocationError,
        match=r"asks for all devices, but resource pool gpu\.example\.com/n1 is currently being updated",
    ):
        allocator([old, new]).allocate(node("n1"), [claim("c", exactly(mode="All"))])
    dup = rslice("dup", [device("g0"), device("g0")])
    with pytest.raises(FailedOnNode, match="invalid resource pools were encountered"):
        allocator([dup]).allocate(node("n1"), [claim("c", exactly(count=3))])


@pytest.mark.parametrize(
    ("request_", "classes", "message"),
    [
        (
            exactly(cls="nope"),
            None,
            "claim ns/c, request req: could not retrieve device class nope:"
            ' deviceclass.resource.k8s.io "nope" not found',
        ),
        (
            exactly("r", 1, "ExactCount", "device.driver =="),
            None,
            "claim ns/c: selector #0: CEL compile error: compilation failed: ERROR:",
        ),
        (exactly(), [dclass("gpu", "1 + 1")], "class gpu: selector #0: CEL compile error: must evaluate to bool"),
        (
            exactly("r", 1, "ExactCount", 'device.attributes["x.io"].y == 1'),
            None,
            "claim ns/c: selector #0: CEL runtime error: no such key: y",
        ),
        (exactly(count=33), None, "claim ns/c: number of requested devices 33 exceeds the claim limit of 32"),
        (exactly(mode="Some"), None, "claim ns/c, request req: unsupported count mode Some"),
    ],
)
def test_broken_claims_and_classes_are_errors_with_upstream_s_words(
    request_: dict[str, Any], classes: list[DeviceClass] | None, message: str
) -> None:
    with pytest.raises(AllocationError) as err:
        allocator([rslice("s", [device("g0")])], classes).allocate(node("n1"), [claim("c", request_)])
    assert str(err.value).startswith(message), str(err.value)


def test_allocated_devices_leave_out_admin_access() -> None:
    body = {
        "metadata": {"name": "c", "namespace": "ns"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": DRIVER, "pool": "n1", "device": "g0"},
                        {"request": "a", "driver": DRIVER, "pool": "n1", "device": "g1", "adminAccess": True},
                    ]
                }
            }
        },
    }
    assert allocated_devices({"ns/c": msgspec.convert(body, ResourceClaim)}) == {(DRIVER, "n1", "g0")}


def test_a_pool_of_several_slices_is_complete_only_with_all_of_them() -> None:
    one = rslice("a", [device("g0")], count=2)
    two = rslice("b", [device("g1")], count=2)
    other = rslice("c", [device("x0")], node_name="n2")
    complete = allocator([one, other, two]).allocate(node("n1"), [claim("c", exactly(mode="All"))])
    assert picked(complete or []) == [["req=g0", "req=g1"]]
    with pytest.raises(AllocationError, match="is currently being updated"):
        allocator([one, other]).allocate(node("n1"), [claim("c", exactly(mode="All"))])


def test_verdicts_on_stored_slices_are_kept_for_later_pods_until_the_slice_changes() -> None:
    cache = SelectorCache()
    stored = rslice("s", [device("g0", model="a")])
    stored.metadata.resource_version = "7"
    by_name = {"gpu": dclass()}
    first = Allocator(by_name.get, [stored], set(), cache).allocate(node("n1"), [claim("c", exactly())])
    assert picked(first or []) == [["req=g0"]]
    assert cache.results == {(f'device.driver == "{DRIVER}"', (DRIVER, "n1", "g0"), ("s", "7")): True}
    cache.results[next(iter(cache.results))] = False  # what a later pod reads, without evaluating again
    assert Allocator(by_name.get, [stored], set(), cache).allocate(node("n1"), [claim("c", exactly())]) is None
    changed = rslice("s", [device("g0", model="a")])
    changed.metadata.resource_version = "8"  # a new version of the slice is judged anew
    assert Allocator(by_name.get, [changed], set(), cache).allocate(node("n1"), [claim("c", exactly())]) is not None
    unstored = rslice("s", [device("g0")])  # no resourceVersion (a cluster file): nothing kept across pods
    cache.results.clear()
    Allocator(by_name.get, [unstored], set(), cache).allocate(node("n1"), [claim("c", exactly())])
    assert cache.results == {}


def test_a_tainted_device_is_never_allocated_and_an_informing_taint_does_not_repel() -> None:
    # v1.37 allocates a tainted device only to requests that tolerate it; kubesched reads no tolerations, so it
    # leaves the device out (the pod waits) rather than give it to a request that may not tolerate it.
    tainted = {**device("g0"), "taints": [{"key": "broken", "effect": "NoSchedule"}]}
    informing = {**device("g1"), "taints": [{"key": "note", "effect": "None"}]}
    alloc = allocator([rslice("s", [tainted, informing])])
    assert picked(alloc.allocate(node("n1"), [claim("c", exactly())]) or []) == [["req=g1"]]
    assert allocator([rslice("s", [tainted])]).allocate(node("n1"), [claim("c", exactly())]) is None
