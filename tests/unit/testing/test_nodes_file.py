"""Nodes files of `kubesched dev-cluster up --nodes-file`: every shape, and errors that name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.testing.nodes_file import MAX_NODES, NodesFileError, load_nodes_file, parse_nodes

COMPACT = """
nodes:
- name: gpu
  count: 2
  labels: {topology.kubernetes.io/zone: zone-a, nvidia.com/gpu.product: A100}
  capacity: {cpu: 16, memory: 64Gi, nvidia.com/gpu: 4}
  allocatable: {cpu: 15500m, memory: 60Gi, nvidia.com/gpu: 4}
  taints: ["nvidia.com/gpu=present:NoSchedule", {key: dedicated, effect: NoExecute}]
- name: cpu-0
  labels: {topology.kubernetes.io/zone: zone-b}
  unschedulable: true
  annotations: {note: "12"}
"""


def problems(text: str) -> str:
    with pytest.raises(NodesFileError) as err:
        parse_nodes(text, "n.yaml")
    message = str(err.value)
    assert message.startswith("n.yaml")
    return message


def test_compact_list_with_count_gpus_zones_and_taints() -> None:
    nodes = parse_nodes(COMPACT)
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1", "cpu-0"]
    gpu = nodes[1]
    assert gpu.manifest["metadata"]["labels"] == {
        "kubernetes.io/hostname": "gpu-1",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": "zone-a",
        "nvidia.com/gpu.product": "A100",
    }
    assert gpu.manifest["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]
    assert "status" not in gpu.manifest  # written through the status subresource
    status = gpu.status["status"]
    assert status["capacity"] == {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}
    assert status["allocatable"] == {"cpu": "15500m", "memory": "60Gi", "nvidia.com/gpu": "4", "pods": "110"}
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    cpu = nodes[2]
    assert cpu.manifest["spec"] == {"unschedulable": True}
    assert cpu.manifest["metadata"]["annotations"] == {"note": "12"}
    assert cpu.status["status"]["allocatable"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}


def test_capacity_alone_is_also_allocatable() -> None:
    (node,) = parse_nodes("- name: a\n  capacity: {cpu: 4, example.com/fpga: 2}\n")
    assert node.status["status"]["allocatable"] == {"cpu": "4", "example.com/fpga": "2", "pods": "110"}


def test_node_objects_nodelists_and_json_keep_every_field() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/arch": "arm64"}},
        "spec": {"podCIDR": "10.1.0.0/24", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "2"},
            "conditions": [{"type": "Ready", "status": "False", "reason": "Test"}],
            "nodeInfo": {"kubeletVersion": "v1.35.4"},
        },
    }
    for text in (json.dumps(node), json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]})):
        (parsed,) = parse_nodes(text)
        assert parsed.manifest["spec"]["podCIDR"] == "10.1.0.0/24"
        assert parsed.manifest["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"  # given wins
        assert parsed.manifest["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
        assert parsed.status["status"]["conditions"] == [{"type": "Ready", "status": "False", "reason": "Test"}]
        assert parsed.status["status"]["nodeInfo"] == {"kubeletVersion": "v1.35.4"}
        assert parsed.status["status"]["allocatable"]["cpu"] == "2"


def test_multi_document_yaml() -> None:
    text = "kind: Node\nmetadata: {name: a}\n---\n- name: b\n---\n"
    assert [n.name for n in parse_nodes(text)] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- name: a\n  lables: {}\n", "[0].lables: unknown field; did you mean 'labels'?"),
        ("- name: a\n  taints: [{key: k, effect: NoSchedul}]\n", "[0].taints[0].effect: must be one of"),
        ("- name: a\n  taints: ['k=v']\n", "[0].taints[0]: 'k=v': want key[=value]:Effect"),
        ("- name: a\n  taints: [k:NoSchedule, k=x:NoSchedule]\n", "[0].taints[1]: duplicate of [0].taints[0]"),
        ("- name: a\n  capacity: {gpu: 1}\n", "[0].capacity.gpu: unknown resource 'gpu': extended resources need"),
        ("- name: a\n  capacity: {nvidia.com/gpu: 0.5}\n", '[0].capacity["nvidia.com/gpu"]: must be a whole number'),
        ("- name: a\n  allocatable: {memory: -1Gi}\n", "[0].allocatable.memory: must not be negative"),
        ("- name: a\n  allocatable: {memory: 12GB}\n", "[0].allocatable.memory: '12GB' is not a quantity"),
        ("- name: a\n  allocatable: {cpu: true}\n", "[0].allocatable.cpu: must be a quantity"),
        ("- name: a\n  labels: {zone: 1}\n", '[0].labels.zone: value must be a string, got a number 1 (quote it: "1")'),
        ("- name: a\n  labels: {'bad key!': x}\n", '[0].labels["bad key!"]: invalid key'),
        ("- name: a\n  labels: {z: 'has space'}\n", "[0].labels.z: invalid label value"),
        ("- name: a\n  labels: {1: x}\n", "[0].labels: keys must be strings, got 1"),
        ("- name: Node_A\n", "[0].name: 'Node_A' is not a valid node name"),
        ("- name: a\n  count: 0\n", "[0].count: must be a whole number from 1 to"),
        ("- name: a\n  unschedulable: 'no'\n", "[0].unschedulable: must be true or false"),
        ("- name: a\n- name: a\n", "[1]: node 'a' is defined twice (also at [0])"),
        ("- {labels: {}}\n", "[0]: missing field 'name'"),
        ("- 42\n", "[0]: must be a node"),
        ("nodes: 3\n", "nodes: must be a list, got a number"),
        ("nodes: []\nextra: 1\n", "extra: unknown field"),
        ("kind: Pod\nmetadata: {name: a}\n", "want apiVersion v1, kind Node"),
        ("kind: Node\nmetadata: {name: a}\nspec: {taints: [{key: k}]}\n", "spec.taints[0].effect: must be one of"),
        ("kind: Node\nmetadata: {name: a}\nstatu: {}\n", "statu: unknown field; did you mean 'status'?"),
        ("kind: NodeList\nitems: {}\n", "items: must be a list"),
        ("just text\n", "(top level): want a Node"),
        ("", "no nodes (the file is empty)"),
        ("- name: a\n  labels: [x\n", "invalid YAML"),
    ],
)
def test_bad_files_name_the_field(text: str, expected: str) -> None:
    assert expected in problems(text)


def test_every_problem_is_reported_up_to_a_limit() -> None:
    text = "".join(f"- name: N{i}\n" for i in range(50))
    message = problems(text)
    assert "[0].name" in message and "[19].name" in message and "[20].name" not in message
    assert "more problems not shown" in message


def test_hostile_input_is_an_error_not_a_crash() -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
    )
    assert "unknown field" in problems(laughs) or "want a Node" in problems(laughs)
    deep = problems("[" * 100_000 + "]" * 100_000)
    assert "maximum nesting depth" in deep or "cannot parse" in deep
    assert "cannot parse" in problems("- name: a\n  labels: {d: 2026-13-45}\n")
    assert "must be a whole number from 1" in problems(f"- name: a\n  count: {MAX_NODES + 1}\n")
    assert f"more than {MAX_NODES} nodes" in problems(f"- name: a\n  count: {MAX_NODES}\n- name: b\n  count: 2\n")
    big_labels = "{" + ", ".join(f"k{i}: v" for i in range(1001)) + "}"
    assert "has 1001 entries; at most 1000" in problems(f"- name: a\n  labels: {big_labels}\n")
    assert "too long once numbered" in problems(f"- name: {'a' * 253}\n  count: 2\n")
    assert "larger than" in problems("#" * (8 * 1024 * 1024 + 1))


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(NodesFileError, match="does not exist"):
        load_nodes_file(tmp_path / "missing.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"- name: \xff\n")
    with pytest.raises(NodesFileError, match="not UTF-8"):
        load_nodes_file(tmp_path / "bin.yaml")
    with pytest.raises(NodesFileError, match="cannot read nodes file"):
        load_nodes_file(tmp_path)
