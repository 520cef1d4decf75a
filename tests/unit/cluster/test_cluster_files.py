"""Cluster files: kinds from lists, ambiguity refused, every kind the plugins read, API-server defaulting."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.cluster.files import ClusterFileError, read_cluster, read_objects

NODE = "{metadata: {name: n1}, status: {allocatable: {cpu: '4', pods: '10'}}}"
POD = "{metadata: {name: p1, namespace: ns, uid: u1}, spec: {containers: [{name: c}]}}"


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_items_of_a_pod_list_are_pods_without_a_kind_of_their_own(tmp_path: Path) -> None:
    nodes, pods = read_objects(write(tmp_path, f"kind: PodList\nitems: [{POD}]\n---\nkind: NodeList\nitems: [{NODE}]"))
    assert [p.metadata.name for p in pods] == ["p1"] and [n.metadata.name for n in nodes] == ["n1"]


def test_an_object_without_kind_that_looks_like_a_pod_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match=r"\$\.items\[0\]: no kind, and it has spec.containers: add kind: Pod"):
        read_objects(write(tmp_path, f"kind: List\nitems: [{POD}]"))


def test_an_item_whose_kind_contradicts_its_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match=r"items\[0\]: kind 'Pod' in a NodeList"):
        read_objects(write(tmp_path, "kind: NodeList\nitems: [{kind: Pod, metadata: {name: x}}]"))


def test_plain_node_files_need_no_kind(tmp_path: Path) -> None:
    nodes, pods = read_objects(write(tmp_path, f"[{NODE}]"))
    assert [n.metadata.name for n in nodes] == ["n1"] and pods == []


def test_namespaces_pdbs_and_priority_classes_are_read(tmp_path: Path) -> None:
    text = """
- {kind: Namespace, metadata: {name: team-a, labels: {team: a}}}
- {kind: PodDisruptionBudget, metadata: {name: db, namespace: ns},
   spec: {selector: {matchLabels: {app: db}}}, status: {disruptionsAllowed: 1}}
- {kind: PriorityClass, metadata: {name: high}, value: 1000, preemptionPolicy: Never}
"""
    got = read_cluster(write(tmp_path, text))
    assert [(n.metadata.name, n.metadata.labels) for n in got.namespaces] == [("team-a", {"team": "a"})]
    assert [p.metadata.name for p in got.pdbs] == ["db"] and got.pdbs[0].status.disruptions_allowed == 1
    assert [(c.name, c.value, c.preemption_policy) for c in got.priority_classes] == [("high", 1000, "Never")]


def test_kinds_not_read_yet_are_refused_not_ignored(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match="'CSIDriver' is not supported yet"):
        read_cluster(write(tmp_path, "- {kind: CSIDriver, metadata: {name: c}}"))


def pod_with(spec_extra: str, extra_docs: str = "") -> str:
    return f"{extra_docs}\n---\nkind: Pod\nmetadata: {{name: p, namespace: ns, uid: u}}\nspec: {spec_extra}\n"


def test_limits_become_requests_where_requests_are_absent(tmp_path: Path) -> None:
    spec = "{containers: [{name: c, resources: {limits: {cpu: '2', memory: 1Gi}, requests: {memory: 512Mi}}}]}"
    (pod,) = read_cluster(write(tmp_path, pod_with(spec))).pods
    requests = pod.spec.containers[0].resources.requests  # type: ignore[index,union-attr]
    assert requests == {"cpu": "2", "memory": "512Mi"}
    assert pod.spec.scheduler_name == "default-scheduler"


def test_priority_comes_from_the_class_or_the_global_default(tmp_path: Path) -> None:
    classes = (
        "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n"
        "kind: PriorityClass\nmetadata: {name: base}\nvalue: 10\nglobalDefault: true"
    )
    (named,) = read_cluster(
        write(tmp_path, pod_with("{priorityClassName: high, containers: [{name: c}]}", classes))
    ).pods
    assert named.spec.priority == 1000
    (default,) = read_cluster(write(tmp_path, pod_with("{containers: [{name: c}]}", classes))).pods
    assert default.spec.priority == 10
    (system,) = read_cluster(
        write(tmp_path, pod_with("{priorityClassName: system-node-critical, containers: []}"))
    ).pods
    assert system.spec.priority == 2000001000


def test_an_unknown_class_or_a_contradicting_priority_is_refused_as_the_server_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match="no PriorityClass with name gold was found"):
        read_cluster(write(tmp_path, pod_with("{priorityClassName: gold, containers: []}")))
    cls = "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1000"
    with pytest.raises(ClusterFileError, match=r"the integer value of priority \(5\) must not be provided"):
        read_cluster(write(tmp_path, pod_with("{priorityClassName: high, priority: 5, containers: []}", cls)))


def test_a_priority_without_any_class_is_kept(tmp_path: Path) -> None:
    (pod,) = read_cluster(write(tmp_path, pod_with("{priority: 7, containers: []}"))).pods
    assert pod.spec.priority == 7


def test_default_toleration_seconds_are_added_unless_tolerated(tmp_path: Path) -> None:
    (pod,) = read_cluster(write(tmp_path, pod_with("{containers: []}"))).pods
    assert {(t.key, t.effect, t.toleration_seconds) for t in pod.spec.tolerations or ()} == {
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    }
    (all_tolerated,) = read_cluster(
        write(tmp_path, pod_with("{tolerations: [{operator: Exists}], containers: []}"))
    ).pods
    assert [t.operator for t in all_tolerated.spec.tolerations or ()] == ["Exists"]


def test_two_global_defaults_are_refused(tmp_path: Path) -> None:
    text = "\n---\n".join(
        f"kind: PriorityClass\nmetadata: {{name: c{i}}}\nvalue: {i}\nglobalDefault: true" for i in (1, 2)
    )
    with pytest.raises(ClusterFileError, match="only one may have globalDefault"):
        read_cluster(write(tmp_path, text))


def test_a_set_priority_is_kept_when_the_file_lacks_the_class_it_names(tmp_path: Path) -> None:
    got = read_cluster(write(tmp_path, pod_with("{priorityClassName: gold, priority: 1000, containers: []}")))
    assert [p.spec.priority for p in got.pods] == [1000]
    assert got.warnings == [
        f"{tmp_path / 'cluster.yaml'}: no PriorityClass gold in the file: spec.priority 1000 is kept"
    ]


def stored_pod(spec: str) -> str:
    return f"kind: Pod\nmetadata: {{name: p, namespace: ns, uid: u, resourceVersion: '42'}}\nspec: {spec}\n"


def test_a_pod_the_api_server_stored_is_not_admitted_again(tmp_path: Path) -> None:
    cls = "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n"
    # The class's value differs from the pod's (the class was deleted and made again): the stored pod wins.
    spec = "{priorityClassName: high, priority: 5, containers: [{name: c, resources: {limits: {cpu: '1'}}}]}"
    got = read_cluster(write(tmp_path, cls + stored_pod(spec)))
    (pod,) = got.pods
    assert pod.spec.priority == 5 and got.warnings == []
    assert pod.spec.tolerations is None and pod.spec.containers[0].resources.requests is None  # type: ignore[index,union-attr]
    # A class the file lacks, no priority set: what the server stored is taken (it had admitted the pod).
    (missing,) = read_cluster(write(tmp_path, stored_pod("{priorityClassName: gold, containers: []}"))).pods
    assert missing.spec.priority is None


KUBECTL_LIST = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations: {node.alpha.kubernetes.io/ttl: "0"}
    creationTimestamp: "2026-12-01T00:00:00Z"
    labels: {kubernetes.io/hostname: n1}
    managedFields:
    - {apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {f:metadata: {}}, manager: kubelet, operation: Update}
    name: n1
    resourceVersion: "100"
    uid: 5c1d
  spec: {podCIDR: 10.244.0.0/24}
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
    conditions: [{type: Ready, status: "True", lastHeartbeatTime: "2026-12-01T00:00:00Z"}]
    nodeInfo: {kubeletVersion: v1.37.2, architecture: amd64}
- apiVersion: v1
  kind: Pod
  metadata: {name: web, namespace: prod, uid: 77aa, resourceVersion: "120", ownerReferences: []}
  spec:
    containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
    priority: 100000
    priorityClassName: business-critical
    preemptionPolicy: PreemptLowerPriority
    schedulerName: default-scheduler
    tolerations:
    - {effect: NoExecute, key: node.kubernetes.io/not-ready, operator: Exists, tolerationSeconds: 300}
  status: {phase: Pending, qosClass: Burstable}
kind: List
metadata: {resourceVersion: ""}
"""


def test_kubectl_get_nodes_pods_output_is_read_as_the_server_stored_it(tmp_path: Path) -> None:
    got = read_cluster(write(tmp_path, KUBECTL_LIST))
    assert [n.metadata.name for n in got.nodes] == ["n1"] and got.warnings == []
    (pod,) = got.pods
    assert (pod.spec.priority, pod.spec.preemption_policy) == (100000, "PreemptLowerPriority")
    assert [t.key for t in pod.spec.tolerations or ()] == ["node.kubernetes.io/not-ready"]  # none added
