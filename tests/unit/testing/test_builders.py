"""Builders: what they build is what the API server would send, and what the scheduler then sees."""

from __future__ import annotations

from kubesched.testing.builders import (
    PAUSE_IMAGE,
    batch,
    make_node,
    make_pod,
    make_pod_object,
    make_table,
    node_json,
    pod_json,
    pod_manifest,
)


def test_node_json_defaults_and_options() -> None:
    plain = node_json("n")
    assert plain["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert plain["status"]["capacity"] == plain["status"]["allocatable"]
    assert plain["spec"] == {}
    cordoned = node_json("c", alloc={"cpu": 2}, taints=[{"key": "k", "effect": "NoSchedule"}], unschedulable=True)
    assert cordoned["status"]["allocatable"] == {"cpu": "2"}
    assert cordoned["spec"] == {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]}
    assert node_json("i", images={"img:1": 10})["status"]["images"] == [{"names": ["img:1"], "sizeBytes": 10}]


def test_typed_node_reads_what_was_built() -> None:
    node = make_node("n", labels={"zone": "a"}, alloc={"cpu": "2", "pods": "10"})
    assert node.metadata.name == "n" and node.metadata.labels == {"zone": "a"}
    table = make_table([node, make_node("m")])
    assert table.names[:2] == ["n", "m"] and len(batch(table).rows) == 2


def test_pod_json_adds_one_container_only_when_asked() -> None:
    assert pod_json("p")["spec"] == {}
    body = pod_json("p", requests={"cpu": "1"}, limits={"example.com/r": 2}, image="img", node_name="n", priority=5)
    assert body["spec"] == {
        "containers": [
            {"name": "c", "image": "img", "resources": {"requests": {"cpu": "1"}, "limits": {"example.com/r": "2"}}}
        ],
        "nodeName": "n",
        "priority": 5,
    }
    assert body["metadata"] == {"name": "p", "namespace": "default", "uid": "uid-p"}


def test_pods_typed_and_compiled() -> None:
    raw = make_pod_object("web", namespace="ns", labels={"app": "web"}, requests={"cpu": "500m"})
    assert (raw.metadata.namespace, raw.metadata.uid) == ("ns", "uid-web")
    info = make_pod("web", namespace="ns", requests={"cpu": "500m"})
    assert info.key == "ns/web" and info.requests == {"cpu": 500}


def test_pod_manifest_is_what_a_client_posts() -> None:
    body = pod_manifest("p", scheduler="kubesched", requests={"cpu": "10m"}, priority_class="high")
    assert body["apiVersion"] == "v1" and body["kind"] == "Pod"
    assert body["metadata"] == {"name": "p"}  # the server names the namespace (from the URL) and the uid
    assert body["spec"]["containers"] == [
        {"name": "c", "image": PAUSE_IMAGE, "resources": {"requests": {"cpu": "10m"}}}
    ]
    assert (body["spec"]["schedulerName"], body["spec"]["priorityClassName"]) == ("kubesched", "high")
