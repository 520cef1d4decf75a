"""The one-node paths (plain ints and floats) of the resource plugins agree with their numpy paths.

A hinted or nominated node is filtered and scored alone; those paths skip numpy, so they must give
exactly what the batch computation gives for the same row.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.framework.interfaces import CycleState, NodeBatch
from kubesched.plugins.balanced_allocation import NodeResourcesBalancedAllocation, NodeResourcesBalancedAllocationArgs
from kubesched.plugins.node_resources_fit import (
    NodeResourcesFit,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from kubesched.testing.builders import make_node, make_pod, make_table

GPU = "example.com/gpu"


def random_case(seed: int) -> tuple[list[object], list[object]]:
    rng = random.Random(seed)
    nodes = []
    for i in range(40):
        alloc = {
            "cpu": rng.choice(["0", "1", "4", "7500m", "64"]),
            "memory": rng.choice(["0", "1Gi", "3Gi", "256Gi", "1000000007"]),
            "pods": rng.choice(["0", "1", "3", "110"]),
            "ephemeral-storage": rng.choice(["0", "10Gi"]),
            GPU: rng.choice(["0", "1", "8"]),
        }
        nodes.append(make_node(f"n{i}", alloc=alloc))
    pods = []
    for i in range(60):
        requests = {
            k: v
            for k, v in (
                ("cpu", rng.choice(["", "1m", "250m", "3"])),
                ("memory", rng.choice(["", "1", "300Mi", "2Gi"])),
            )
            if v
        }
        if rng.random() < 0.3:
            requests[GPU] = str(rng.choice([1, 2]))
        if rng.random() < 0.2:
            requests["ephemeral-storage"] = "1Gi"
        pods.append(make_pod(f"p{seed}-{i}", requests=requests))
    return nodes, pods


PLUGINS = [
    NodeResourcesFit(),
    NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type="MostAllocated"))),
    NodeResourcesFit(
        NodeResourcesFitArgs(
            scoring_strategy=ScoringStrategy(
                type="LeastAllocated",
                resources=[ResourceSpec("cpu", 3), ResourceSpec("memory", 1), ResourceSpec(GPU, 5)],
            )
        )
    ),
    NodeResourcesBalancedAllocation(),
    NodeResourcesBalancedAllocation(
        NodeResourcesBalancedAllocationArgs(
            resources=[
                ResourceSpec("cpu", 1),
                ResourceSpec("memory", 1),
                ResourceSpec(GPU, 1),
                ResourceSpec("ephemeral-storage", 1),
            ]
        )
    ),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: f"{p.name}:{getattr(p, 'resources', '')}")
def test_scoring_one_node_equals_its_row_of_the_batch(seed: int, plugin: NodeResourcesFit) -> None:
    nodes, pods = random_case(seed)
    table = make_table(nodes, {f"n{i}": pods[i : i + 1] for i in range(0, 40, 3)})
    state = CycleState()
    rows = table.rows()
    for pod in pods[40:]:
        whole = plugin.score(state, pod, NodeBatch(table, rows))
        ones = [int(plugin.score(state, pod, NodeBatch(table, rows[i : i + 1]))[0]) for i in range(len(rows))]
        assert ones == whole.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_filtering_one_node_equals_its_row_of_the_batch(seed: int) -> None:
    nodes, pods = random_case(seed)
    table = make_table(nodes, {f"n{i}": pods[i : i + 2] for i in range(0, 40, 2)})
    plugin, state, rows = NodeResourcesFit(), CycleState(), table.rows()
    for pod in pods[40:]:
        whole = plugin.filter(state, pod, NodeBatch(table, rows))
        for i in range(len(rows)):
            one = plugin.filter(state, pod, NodeBatch(table, rows[i : i + 1]))
            code = int(whole.codes[i])
            assert int(one.codes[0] != 0) == int(code != 0)
            if code:
                assert one.statuses[int(one.codes[0]) - 1] == whole.statuses[code - 1]
    assert np.array_equal(table.free("pods"), table.allocatable("pods") - table.pod_count())
