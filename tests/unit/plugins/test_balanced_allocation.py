from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.framework.interfaces import CycleState
from kubesched.framework.profile import PluginRef, ProfileError, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SKIP, SUCCESS, Status
from kubesched.plugins import in_tree
from kubesched.plugins.balanced_allocation import NodeResourcesBalancedAllocation, NodeResourcesBalancedAllocationArgs
from kubesched.testing.builders import batch, make_node, make_pod, make_table

GPU = "example.com/gpu"
WITH_GPU = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}


def plugin(args: dict[str, Any] | None = None) -> NodeResourcesBalancedAllocation:
    return NodeResourcesBalancedAllocation(msgspec.convert(args or {}, NodeResourcesBalancedAllocationArgs))


@pytest.mark.parametrize(
    ("args", "requests", "status"),
    [
        (None, {}, SKIP),
        (None, {"cpu": "0", "memory": "0"}, SKIP),
        (None, {GPU: "1"}, SKIP),
        (WITH_GPU, {GPU: "1"}, SUCCESS),
        (None, {"memory": "1Gi"}, SUCCESS),
    ],
    ids=["best-effort", "explicit-zero", "unconfigured-resource-only", "configured-extended", "memory"],
)
def test_pre_score_skips_best_effort_pods(
    args: dict[str, Any] | None, requests: dict[str, str], status: Status
) -> None:
    table = make_table([make_node("n")])
    assert plugin(args).pre_score(CycleState(), make_pod(requests=requests), batch(table)) == status


@pytest.mark.parametrize(
    ("args", "requests", "expected"),
    [
        # n: cpu 2000/4000 = 0.5, memory 2Gi/8Gi = 0.25 -> std 0.125 -> 87.5 -> 87.
        # small: cpu min(3000/1000, 1) = 1, memory 1Gi/1Gi = 1 -> 100. gpu: cpu 0.25, memory 0.125 -> 93.75 -> 93.
        (None, {"cpu": "1", "memory": "1Gi"}, [87, 100, 93]),
        # Real requests, no 100m/200Mi defaults: n memory stays 1Gi/8Gi = 0.125 -> std 0.1875 -> 81.
        # small: cpu 1, memory 0 -> 50; gpu: 0.25, 0 -> 87.
        (None, {"cpu": "1"}, [81, 50, 87]),
        # Three fractions on gpu (0.25, 0.125, 0.25): population std 0.0589 -> 94; the others lack the
        # resource and keep their two fractions.
        (WITH_GPU, {"cpu": "1", "memory": "1Gi", GPU: "1"}, [87, 100, 94]),
        # cpu and gpu only: on nodes without gpu a single fraction remains, std 0 -> 100.
        ({"resources": [{"name": "cpu"}, {"name": GPU}]}, {"cpu": "1", GPU: "1"}, [100, 100, 100]),
    ],
    ids=["two-resources", "real-requests", "three-resources", "single-fraction"],
)
def test_score(args: dict[str, Any] | None, requests: dict[str, str], expected: list[int]) -> None:
    table = make_table(
        [
            make_node("n", alloc={"cpu": "4", "memory": "8Gi"}),
            make_node("small", alloc={"cpu": "1", "memory": "1Gi"}),
            make_node("gpu", alloc={"cpu": "4", "memory": "8Gi", GPU: "4"}),
        ],
        {
            "n": [make_pod("old", requests={"cpu": "1", "memory": "1Gi"})],
            "small": [make_pod("s", requests={"cpu": "2"})],
        },
    )
    assert plugin(args).score(CycleState(), make_pod(requests=requests), batch(table)).tolist() == expected


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            {"resources": [{"name": "cpu", "weight": 2}, {"name": "cpu"}]},
            'resources[0].weight: Invalid value: 2: must be 1; resources[1].name: Duplicate value: "cpu"',
        ),
        ({"resources": [{"name": "cpu", "wieght": 1}]}, "Object contains unknown field `wieght` - at `$.resources[0]`"),
    ],
    ids=["weight-and-duplicate", "unknown-field"],
)
def test_args_errors(args: dict[str, Any], problem: str) -> None:
    name = "NodeResourcesBalancedAllocation"
    with pytest.raises(ProfileError) as err:
        Framework.build(ProfileSpec(plugins=(PluginRef(name),), plugin_args={name: args}), in_tree())
    assert err.value.problems == [f"pluginConfig[{name}].args: {problem}"]


def test_default_resources_are_cpu_and_memory() -> None:
    assert plugin().resources == ("cpu", "memory")
    assert plugin({"resources": [{"name": GPU, "weight": 0}]}).resources == (GPU,)
