from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import CycleState
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.plugins import in_tree
from kubesched.plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

GPU = "example.com/gpu"


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


def fit(args: dict[str, Any] | None = None) -> NodeResourcesFit:
    return NodeResourcesFit(msgspec.convert(args or {}, NodeResourcesFitArgs))


NODE = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "10Gi", GPU: "2", "hugepages-2Mi": "4Mi"}


@pytest.mark.parametrize(
    ("requests", "alloc", "used", "expected"),
    [
        ({"cpu": "1"}, NODE, {"cpu": "2"}, None),
        ({"cpu": "3"}, NODE, {"cpu": "2"}, unschedulable("Insufficient cpu")),
        ({"cpu": "5"}, NODE, {}, unresolvable("Insufficient cpu")),
        ({"memory": "7Gi"}, NODE, {"memory": "2Gi"}, unschedulable("Insufficient memory")),
        (
            {"cpu": "3", "memory": "7Gi"},
            NODE,
            {"cpu": "2", "memory": "2Gi"},
            unschedulable("Insufficient cpu", "Insufficient memory"),
        ),
        (
            {"cpu": "5", "memory": "7Gi"},
            NODE,
            {"memory": "2Gi"},
            unresolvable("Insufficient cpu", "Insufficient memory"),
        ),
        (
            {"ephemeral-storage": "6Gi"},
            NODE,
            {"ephemeral-storage": "5Gi"},
            unschedulable("Insufficient ephemeral-storage"),
        ),
        ({GPU: "1"}, NODE, {GPU: "2"}, unschedulable("Insufficient example.com/gpu")),
        ({GPU: "1"}, {"cpu": "4", "pods": "110"}, {}, unresolvable("Insufficient example.com/gpu")),
        ({"hugepages-2Mi": "4Mi"}, NODE, {"hugepages-2Mi": "2Mi"}, unschedulable("Insufficient hugepages-2Mi")),
        (
            {"cpu": "3", GPU: "3", "hugepages-2Mi": "4Mi"},
            NODE,
            {"cpu": "2", "hugepages-2Mi": "2Mi"},
            unresolvable("Insufficient cpu", "Insufficient example.com/gpu", "Insufficient hugepages-2Mi"),
        ),
        ({}, {**NODE, "pods": "1"}, {}, unschedulable("Too many pods")),
        ({}, {"cpu": "4"}, None, unschedulable("Too many pods")),
        ({"cpu": "5"}, {**NODE, "pods": "1"}, {}, unresolvable("Too many pods", "Insufficient cpu")),
        ({}, NODE, {"cpu": "4", "memory": "8Gi"}, None),
        ({"cpu": "0", "foo": "9"}, NODE, {"cpu": "4"}, None),
    ],
    ids=[
        "fits",
        "cpu",
        "cpu-beyond-allocatable",
        "memory",
        "cpu-and-memory",
        "one-beyond-makes-all-unresolvable",
        "ephemeral-storage",
        "extended",
        "extended-absent",
        "hugepages",
        "scalars-in-name-order",
        "too-many-pods",
        "no-pods-allocatable",
        "too-many-pods-and-cpu-beyond",
        "zero-request-on-full-node",
        "zero-and-unknown-native-ignored",
    ],
)
def test_filter(
    requests: dict[str, str], alloc: dict[str, str], used: dict[str, str] | None, expected: Status | None
) -> None:
    on_node = [] if used is None else [make_pod("old", requests=used)]
    table = make_table([make_node("n", alloc=alloc)], {"n": on_node})
    assert results(fit().filter(CycleState(), make_pod(requests=requests), batch(table))) == [expected]


@pytest.mark.parametrize(
    ("args", "requests", "expected"),
    [
        ({"ignoredResources": [GPU]}, {GPU: "1", "cpu": "1"}, None),
        ({"ignoredResourceGroups": ["example.com"]}, {GPU: "1"}, None),
        ({"ignoredResourceGroups": ["example"]}, {GPU: "1"}, unresolvable("Insufficient example.com/gpu")),
        ({"ignoredResources": ["hugepages-2Mi"]}, {"hugepages-2Mi": "2Mi"}, unresolvable("Insufficient hugepages-2Mi")),
        (
            {"ignoredResourceGroups": ["kubernetes.io"]},
            {"kubernetes.io/batteries": "1"},
            unresolvable("Insufficient kubernetes.io/batteries"),
        ),
    ],
    ids=["resource", "group", "other-group", "hugepages-not-ignorable", "native-prefix-not-ignorable"],
)
def test_ignored_extended_resources(args: dict[str, Any], requests: dict[str, str], expected: Status | None) -> None:
    table = make_table([make_node("n", alloc={"cpu": "4", "pods": "110"})])
    assert results(fit(args).filter(CycleState(), make_pod(requests=requests), batch(table))) == [expected]


@pytest.mark.parametrize(
    ("spec", "cpu", "expected"),
    [
        # max(containers 1, init 3) = 3 > 2 free.
        (
            {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
            },
            3000,
            unschedulable("Insufficient cpu"),
        ),
        # Sidecar 1 runs beside the container 1: 2 fits exactly.
        (
            {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}],
            },
            2000,
            None,
        ),
        # An init container after the sidecar runs beside it: 1500m + 1 = 2500m.
        (
            {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "initContainers": [
                    {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                    {"name": "i", "resources": {"requests": {"cpu": "1500m"}}},
                ],
            },
            2500,
            unschedulable("Insufficient cpu"),
        ),
    ],
    ids=["init-max", "sidecar-adds", "init-after-sidecar"],
)
def test_init_and_sidecar_containers(spec: dict[str, Any], cpu: int, expected: Status | None) -> None:
    pod = make_pod(**spec)
    assert pod.requests["cpu"] == cpu
    table = make_table([make_node("n")], {"n": [make_pod("old", requests={"cpu": "2"})]})
    assert results(fit().filter(CycleState(), pod, batch(table))) == [expected]


# n1: 4 cpu / 8Gi with 1 cpu, 2Gi used; n2: 2 cpu / 4Gi empty; n3: 1 cpu / 1Gi empty;
# n4: 1 cpu / 1Gi with 1Gi used (memory over-committed once the pod is counted).
SCORE_NODES = [
    make_node("n1", alloc={"cpu": "4", "memory": "8Gi"}),
    make_node("n2", alloc={"cpu": "2", "memory": "4Gi"}),
    make_node("n3", alloc={"cpu": "1", "memory": "1Gi"}),
    make_node("n4", alloc={"cpu": "1", "memory": "1Gi"}),
]
SCORE_PODS = {
    "n1": [make_pod("u1", requests={"cpu": "1", "memory": "2Gi"})],
    "n4": [make_pod("u4", requests={"memory": "1Gi"})],
}


def scores(args: dict[str, Any], requests: dict[str, str], nodes: Any = None, pods: Any = None) -> list[int]:
    table = make_table(nodes or SCORE_NODES, SCORE_PODS if pods is None else pods)
    return fit(args).score(CycleState(), make_pod(requests=requests), batch(table)).tolist()


HALF_CPU_1GI = {"cpu": "500m", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("strategy", "requests", "expected"),
    [
        # n1: cpu (4000-1500)·100/4000 = 62, memory (8-3)·100/8 = 62 -> 62; n2: 75, 75; n3: 50, 0 -> 25;
        # n4: the memory-only pod there counts the 100m cpu default: cpu 600m -> 40, memory over-committed 0 -> 20.
        ({"type": "LeastAllocated"}, HALF_CPU_1GI, [62, 75, 25, 20]),
        # cpu weight 2: n3 (50·2 + 0)/3 = 33, n4 (40·2 + 0)/3 = 26.
        (
            {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 2}, {"name": "memory"}]},
            HALF_CPU_1GI,
            [62, 75, 33, 26],
        ),
        # n1: 1500·100/4000 = 37, 3·100/8 = 37; n2: 25, 25; n3: 50, 100 -> 75; n4: 60, min(2Gi, 1Gi) -> 100 -> 80.
        ({"type": "MostAllocated"}, HALF_CPU_1GI, [37, 25, 75, 80]),
        # A best-effort pod counts 100m and 200Mi: n2 cpu 1900·100/2000 = 95, memory 3896Mi·100/4096Mi = 95.
        ({"type": "LeastAllocated"}, {}, [72, 95, 85, 40]),
    ],
    ids=["least", "least-weighted", "most", "least-best-effort-defaults"],
)
def test_score_least_and_most_allocated(
    strategy: dict[str, Any], requests: dict[str, str], expected: list[int]
) -> None:
    assert scores({"scoringStrategy": strategy}, requests) == expected


def test_score_skips_resources_a_node_lacks_or_the_pod_does_not_request() -> None:
    nodes = [
        make_node("gpu", alloc={"cpu": "4", "memory": "8Gi", GPU: "4"}),
        make_node("plain", alloc={"cpu": "4", "memory": "8Gi"}),
    ]
    args = {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU, "weight": 5}],
        }
    }
    # gpu: cpu 75, memory 87, gpu (4-1)·100/4 = 75 -> (75 + 87 + 375)/7 = 76; plain: (75 + 87)/2 = 81.
    assert scores(args, {"cpu": "1", "memory": "1Gi", GPU: "1"}, nodes, {}) == [76, 81]
    # Not requested, the extended resource is left out everywhere.
    assert scores(args, {"cpu": "1", "memory": "1Gi"}, nodes, {}) == [81, 81]


def rtcr(shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    strategy: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }
    if resources is not None:
        strategy["resources"] = resources
    return {"scoringStrategy": strategy}


def test_rtcr_falling_shape_truncates_toward_zero() -> None:
    # Points scaled by 10: (0, 100), (30, 30), (100, 0); only cpu, alloc 1000m, pod 100m.
    nodes = [make_node(f"n{i}", alloc={"cpu": "1"}) for i in range(5)]
    used = {"n1": "200m", "n2": "230m", "n3": "900m", "n4": "1500m"}
    pods = {name: [make_pod(f"u-{name}", requests={"cpu": cpu})] for name, cpu in used.items()}
    # u=10: 100 + trunc(-70·10/30) = 100 - 23 = 77 (flooring would give 76);
    # u=30: exactly the point, 30; u=33: 30 + trunc(-30·3/70) = 29 (flooring: 28);
    # u=100 and over capacity: f = 0, no resource counts, score 0.
    args = rtcr([(0, 10), (30, 3), (100, 0)], [{"name": "cpu", "weight": 1}])
    assert scores(args, {"cpu": "100m"}, nodes, pods) == [77, 30, 29, 0, 0]


def test_rtcr_rounds_half_away_from_zero_and_ignores_zero_scores() -> None:
    nodes = [
        make_node("n", alloc={"cpu": "4", "memory": "8Gi"}),
        make_node("big-memory", alloc={"cpu": "4", "memory": "1000Gi"}),
    ]
    pods = {name: [make_pod(f"u-{name}", requests={"cpu": "1", "memory": "1976Mi"})] for name in ("n", "big-memory")}
    # n: u_cpu = 1500·100/4000 = 37, u_mem = 3000Mi·100/8192Mi = 36 -> round(36.5) = 37 (Python's round gives 36).
    # big-memory: u_mem = 0 -> f = 0, so memory drops out of the mean: 37.
    assert scores(rtcr([(0, 0), (100, 10)]), HALF_CPU_1GI, nodes, pods) == [37, 37]


def test_rtcr_before_first_and_after_last_point() -> None:
    nodes = [make_node(f"n{i}", alloc={"cpu": "1"}) for i in range(3)]
    pods = {"n1": [make_pod("u1", requests={"cpu": "400m"})], "n2": [make_pod("u2", requests={"cpu": "700m"})]}
    # Points (20, 40) and (60, 80): u=10 -> 40, u=50 -> 40 + 40·30/40 = 70, u=80 -> 80.
    args = rtcr([(20, 4), (60, 8)], [{"name": "cpu", "weight": 3}])
    assert scores(args, {"cpu": "100m"}, nodes, pods) == [40, 70, 80]


def build_problems(args: dict[str, dict[str, Any]]) -> list[str]:
    plugins = tuple(PluginRef(name) for name in args)
    with pytest.raises(ConfigurationError) as err:
        Framework.build(ProfileSpec(plugins=plugins, plugin_args=args), in_tree())
    return [str(e) for e in err.value.errors]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            {"scoringStrategy": {"type": "Random"}},
            'scoringStrategy.type: Unsupported value: "Random": '
            'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 101}, {"name": "memory", "weight": -1}],
                }
            },
            "scoringStrategy.resources[0].weight: Invalid value: 101: "
            "resource weight of cpu not in valid range (0, 100]; "
            "scoringStrategy.resources[1].weight: Invalid value: -1: "
            "resource weight of memory not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio: Required value: needed by type RequestedToCapacityRatio",
        ),
        (
            rtcr([]),
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified",
        ),
        (
            rtcr([(50, 11), (50, 5), (101, -1)]),
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 50: "
            "values must be sorted in increasing order; "
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]; "
            "scoringStrategy.requestedToCapacityRatio.shape[2].utilization: Invalid value: 101: "
            "not in valid range [0, 100]; "
            "scoringStrategy.requestedToCapacityRatio.shape[2].score: Invalid value: -1: not in valid range [0, 10]",
        ),
        (
            {"ignoredResources": ["a/b/c"], "ignoredResourceGroups": ["example.com/x"]},
            'ignoredResources[0]: Invalid value: "a/b/c": must be a qualified name; '
            "ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'",
        ),
        (
            {"scoringStrategy": {"typ": "LeastAllocated"}},
            "Object contains unknown field `typ` - at `$.scoringStrategy`",
        ),
    ],
    ids=["type", "weights", "rtcr-without-shape", "empty-shape", "shape", "ignored-names", "unknown-field"],
)
def test_args_errors(args: dict[str, Any], problem: str) -> None:
    assert build_problems({"NodeResourcesFit": args}) == [f"pluginConfig[NodeResourcesFit].args: {problem}"]


def test_weight_zero_defaults_to_one_and_empty_resources_to_cpu_and_memory() -> None:
    assert fit(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}
    ).resources == (("cpu", 1),)
    assert fit({"scoringStrategy": {"type": "MostAllocated"}}).resources == (("cpu", 1), ("memory", 1))
    assert fit().resources == (("cpu", 1), ("memory", 1))


def test_every_plugins_problems_are_reported_together() -> None:
    problems = build_problems(
        {
            "NodeResourcesFit": {
                "scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 200}]}
            },
            "NodeResourcesBalancedAllocation": {"resources": [{"name": "cpu", "weight": 2}]},
        }
    )
    assert problems == [
        "pluginConfig[NodeResourcesFit].args: scoringStrategy.resources[0].weight: Invalid value: 200: "
        "resource weight of cpu not in valid range (0, 100]",
        "pluginConfig[NodeResourcesBalancedAllocation].args: resources[0].weight: Invalid value: 2: must be 1",
    ]
