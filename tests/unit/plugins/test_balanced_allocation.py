from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.core.nodetable import NodeTable
from kubesched.errors import ConfigurationError
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import CycleState, NodeBatch
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SKIP, SUCCESS, Status
from kubesched.plugins import in_tree
from kubesched.plugins.balanced_allocation import NodeResourcesBalancedAllocation, NodeResourcesBalancedAllocationArgs
from kubesched.testing.builders import batch, make_node, make_pod, make_table
from kubesched.versions import Release, parse_release

GPU = "example.com/gpu"
WITH_GPU = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}


V1_35, V1_37 = parse_release("1.35"), parse_release("1.37")


def plugin(args: dict[str, Any] | None = None, release: Release = V1_35) -> NodeResourcesBalancedAllocation:
    return NodeResourcesBalancedAllocation(
        msgspec.convert(args or {}, NodeResourcesBalancedAllocationArgs), Handle(release=release)
    )


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
    """v1.35: the balance with the pod."""
    table = three_nodes()
    assert plugin(args).score(CycleState(), make_pod(requests=requests), batch(table)).tolist() == expected
    # The one-node path (batching's) computes the same.
    for row, want in enumerate(expected):
        one = one_row(table, row)
        assert plugin(args).score(CycleState(), make_pod(requests=requests), one).tolist() == [want]


@pytest.mark.parametrize(
    ("args", "requests", "expected"),
    [
        # score = 50 + (50 + with - without) // 2. n: with 87 (above), without cpu 0.25, memory 0.125 -> 93: 72.
        # small: with 100, without (cpu min(2, 1) = 1, memory 0) 50: 100. gpu: with 93, without 100: 71.
        (None, {"cpu": "1", "memory": "1Gi"}, [72, 100, 71]),
        # n: with 81, without 93 -> 69; small: with 50, without 50 -> 75; gpu: with 87, without 100 -> 68.
        (None, {"cpu": "1"}, [69, 75, 68]),
        # gpu: with 94, without (0, 0, 0) 100 -> 72; n and small as two-resources.
        (WITH_GPU, {"cpu": "1", "memory": "1Gi", GPU: "1"}, [72, 100, 72]),
        # One fraction or equal fractions: 100 with and without -> 75 everywhere.
        ({"resources": [{"name": "cpu"}, {"name": GPU}]}, {"cpu": "1", GPU: "1"}, [75, 75, 75]),
    ],
    ids=["two-resources", "real-requests", "three-resources", "single-fraction"],
)
def test_score_v1_37_scores_the_improvement(
    args: dict[str, Any] | None, requests: dict[str, str], expected: list[int]
) -> None:
    """v1.37 (balancedResourceScorer): the change the pod makes to the node's balance."""
    table = three_nodes()
    pod = make_pod(requests=requests)
    assert plugin(args, V1_37).score(CycleState(), pod, batch(table)).tolist() == expected
    for row, want in enumerate(expected):
        assert plugin(args, V1_37).score(CycleState(), pod, one_row(table, row)).tolist() == [want]


def one_row(table: NodeTable, row: int) -> NodeBatch:
    return NodeBatch(table, table.rows()[row : row + 1])


def three_nodes() -> NodeTable:
    return make_table(
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
    with pytest.raises(ConfigurationError) as err:
        Framework.build(ProfileSpec(plugins=(PluginRef(name),), plugin_args={name: args}), in_tree())
    assert [str(e) for e in err.value.errors] == [f"pluginConfig[{name}].args: {problem}"]


def test_default_resources_are_cpu_and_memory() -> None:
    assert plugin().resources == ("cpu", "memory")
    assert plugin({"resources": [{"name": GPU, "weight": 0}]}).resources == (GPU,)
