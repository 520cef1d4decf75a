"""`kubesched snapshot`'s halves without a server: stripping to what the decoders read, the file it writes
read back, and the pager's answers to expired tokens and failing pages (the real API server's faults are
in tests/integration/test_snapshot_apiserver.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from kubesched.api.core import Node, Pod
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.cluster import snapshot
from kubesched.cluster.files import read_cluster
from kubesched.cluster.kubeclient import APIError
from kubesched.cluster.snapshot import ATTEMPTS, Lister, Snapshot, SnapshotError, strip, write_atomically
from kubesched.errors import TransportError

NODE = {
    "metadata": {
        "name": "n1",
        "uid": "u-n1",
        "resourceVersion": "7",
        "labels": {"zone": "a"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kubeadm.alpha.kubernetes.io/cri-socket": "x"},
        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        "creationTimestamp": "2026-12-01T00:00:00Z",
    },
    "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
    "status": {
        "allocatable": {"cpu": "4", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
        "nodeInfo": {"kubeletVersion": "v1.37.2"},
        "images": [{"names": ["pause:3.10"], "sizeBytes": 700000}],
    },
}
POD = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-p",
        "resourceVersion": "9",
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
        "managedFields": [{"manager": "kubectl"}],
    },
    "spec": {
        "schedulerName": "default-scheduler",
        "priorityClassName": "gold",
        "priority": 1000,
        "containers": [{"name": "c", "image": "nginx", "env": [{"name": "PASSWORD", "value": "hunter2"}]}],
        "serviceAccountName": "sa",
    },
    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "message": "m"}]},
}


def test_stripping_keeps_what_the_decoders_read_and_drops_the_rest() -> None:
    node = strip(msgspec.convert(NODE, Node))
    assert node["metadata"] == {"name": "n1", "uid": "u-n1", "resourceVersion": "7", "labels": {"zone": "a"}}
    assert node["spec"] == {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}
    assert node["status"] == {
        "allocatable": {"cpu": "4", "pods": "110"},
        "images": [{"names": ["pause:3.10"], "sizeBytes": 700000}],
    }
    pod = strip(msgspec.convert(POD, Pod))
    text = json.dumps(pod)
    for gone in ("managedFields", "last-applied", "hunter2", "serviceAccountName", "annotations"):
        assert gone not in text
    # The priority admission set is what the scheduler reads; the class's name is not.
    assert pod["spec"]["priority"] == 1000 and "priorityClassName" not in pod["spec"]
    assert pod["status"]["conditions"] == [{"type": "PodScheduled", "status": "False", "message": "m"}]


def test_the_volume_binding_annotations_are_the_ones_kept() -> None:
    pvc = {
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "annotations": {
                "pv.kubernetes.io/bind-completed": "yes",
                "volume.kubernetes.io/selected-node": "n1",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
            },
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    got = strip(msgspec.convert(pvc, PersistentVolumeClaim))
    assert got["metadata"]["annotations"] == {
        "pv.kubernetes.io/bind-completed": "yes",
        "volume.kubernetes.io/selected-node": "n1",
    }


@pytest.mark.parametrize("name", ["cluster.yaml", "cluster.json"])
def test_a_written_snapshot_reads_back_as_it_was_listed(tmp_path: Path, name: str) -> None:
    snap = Snapshot("https://x", {"Node": [msgspec.convert(NODE, Node)], "Pod": [msgspec.convert(POD, Pod)]})
    path = tmp_path / name
    write_atomically(path, snap.documents(), ["a header"])
    doc = json.loads(path.read_text()) if name.endswith(".json") else yaml.safe_load(path.read_text())
    assert doc["kind"] == "List" and [i["kind"] for i in doc["items"]] == ["Node", "Pod"]
    got = read_cluster(path)
    assert got.nodes == [msgspec.convert(strip(msgspec.convert(NODE, Node)), Node)]
    # The pod was stored by the API server (it has a resourceVersion): taken as stored, though the file
    # has no PriorityClass gold and no default tolerations were added to it.
    assert got.pods == [msgspec.convert(strip(msgspec.convert(POD, Pod)), Pod)] and got.warnings == []
    assert got.pods[0].spec.tolerations is None and got.pods[0].spec.priority == 1000
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left beside it


def test_a_failed_write_leaves_no_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    with pytest.raises(yaml.representer.RepresenterError):
        write_atomically(path, {"kind": "List", "items": [{"x": object()}]})
    assert list(tmp_path.iterdir()) == []


class ScriptedClient:
    """Answers list requests from a script: each entry an exception to raise or a page (items, continue)."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.seen: list[dict[str, str]] = []

    async def request(self, method: str, path: str, params: dict[str, str] | None = None, **_: Any) -> bytes:
        self.seen.append(dict(params or {}))
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        items, token = step
        return msgspec.json.encode(
            {"metadata": {"continue": token}, "items": [{"metadata": {"name": n}} for n in items]}
        )


async def no_sleep(_: float) -> None:
    return None


def list_names(script: list[Any]) -> tuple[list[str], Lister, ScriptedClient]:
    client = ScriptedClient(script)
    lister = Lister(client, chunk_size=2, sleep=no_sleep)  # type: ignore[arg-type]
    got = asyncio.run(lister.list("/api/v1/nodes", Node))
    return [n.metadata.name for n in got], lister, client


def test_pages_are_followed_with_their_continue_token_and_the_limit() -> None:
    names, lister, client = list_names([(["a", "b"], "t1"), (["c"], "")])
    assert names == ["a", "b", "c"] and lister.requests == 2
    assert client.seen == [{"limit": "2"}, {"limit": "2", "continue": "t1"}]


def test_an_expired_token_lists_the_resource_again_from_its_start() -> None:
    expired = APIError(410, "The provided continue parameter is too old", "Expired")
    names, lister, client = list_names([(["a", "b"], "t1"), expired, (["a", "b"], "t2"), (["c", "d"], "")])
    assert names == ["a", "b", "c", "d"] and lister.relists == 1  # nothing of the first attempt kept twice
    assert client.seen[2] == {"limit": "2"}


def test_a_failed_page_is_asked_again_with_the_same_token() -> None:
    script = [(["a", "b"], "t1"), TransportError("connection reset"), APIError(503, "unavailable"), (["c"], "")]
    names, lister, client = list_names(script)
    assert names == ["a", "b", "c"] and lister.retries == 2
    assert client.seen[1:] == [{"limit": "2", "continue": "t1"}] * 3


def test_a_page_failing_every_time_ends_the_snapshot_with_the_error() -> None:
    with pytest.raises(SnapshotError, match=rf"listing /api/v1/nodes: connection reset \(after {ATTEMPTS} attempts\)"):
        list_names([(["a", "b"], "t1")] + [TransportError("connection reset")] * ATTEMPTS)
    with pytest.raises(SnapshotError, match="listing /api/v1/nodes: 403 Forbidden: nodes is forbidden"):
        list_names([APIError(403, "nodes is forbidden", "Forbidden")])


def test_a_snapshot_too_large_for_yaml_is_refused_and_no_file_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = Snapshot("https://x", {"Node": [msgspec.convert(NODE, Node)] * 3}).documents()
    monkeypatch.setattr(snapshot, "MAX_YAML_OBJECTS", 2)
    with pytest.raises(SnapshotError, match=r"3 objects are too many for a YAML cluster file .* -o cluster.json"):
        write_atomically(tmp_path / "cluster.yaml", doc)
    monkeypatch.setattr(snapshot, "MAX_YAML_OBJECTS", 10)
    monkeypatch.setattr(snapshot, "MAX_YAML_BYTES", 100)
    with pytest.raises(SnapshotError, match=r"the snapshot is 0 MiB of YAML, more than a YAML cluster file may be"):
        write_atomically(tmp_path / "cluster.yaml", doc)
    assert list(tmp_path.iterdir()) == []
    write_atomically(tmp_path / "cluster.json", doc)  # JSON has room
    assert len(read_cluster(tmp_path / "cluster.json").nodes) == 3
