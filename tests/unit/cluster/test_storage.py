"""Storage objects in cluster files: read, completed as the API server and PV controller would, hostile input
refused with the file, the item and the field path."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.cluster.files import ClusterFileError, read_cluster
from kubesched.cluster.storage import volume_objects


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


GOOD = """
- {kind: StorageClass, metadata: {name: std}, provisioner: csi.example.com}
- {kind: StorageClass, metadata: {name: local}, provisioner: kubernetes.io/no-provisioner,
   volumeBindingMode: WaitForFirstConsumer}
- {kind: PersistentVolume, metadata: {name: pv1}, spec: {capacity: {storage: 10Gi}, accessModes: [ReadWriteOnce]}}
- {kind: PersistentVolume, metadata: {name: pv2}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce],
   claimRef: {namespace: default, name: c2}}}
- {kind: PersistentVolumeClaim, metadata: {name: c1},
   spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}
- {kind: PersistentVolumeClaim, metadata: {name: c2, namespace: ns},
   spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeName: pv2}}
- {kind: CSINode, metadata: {name: n1},
   spec: {drivers: [{name: ebs.csi.aws.com, nodeID: i-1, allocatable: {count: 25}}]}}
"""


def test_storage_kinds_are_read_and_completed(tmp_path: Path) -> None:
    store = volume_objects(read_cluster(write(tmp_path, GOOD)).storage)
    std, local = store.storage_class("std"), store.storage_class("local")
    assert std is not None and std.volume_binding_mode == "Immediate"  # kube-apiserver's default
    assert local is not None and local.volume_binding_mode == "WaitForFirstConsumer"
    pv1, pv2 = store.pv("pv1"), store.pv("pv2")
    assert pv1 is not None and pv1.status.phase == "Available"
    assert pv2 is not None and pv2.status.phase == "Bound"
    c1, c2 = store.pvc("default", "c1"), store.pvc("ns", "c2")
    assert c1 is not None and c1.metadata.uid and c1.status.phase != "Bound"
    assert c2 is not None and c2.status.phase == "Bound"
    assert (c2.metadata.annotations or {}).get("pv.kubernetes.io/bind-completed") == "yes"
    node = store.csinode("n1")
    assert node is not None and node.spec.drivers and node.spec.drivers[0].allocatable.count == 25  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "{kind: PersistentVolume, metadata: {name: p}, spec: {capacity: {storage: lots}, accessModes: [RWO]}}",
            "$[0]: PersistentVolume: spec.capacity.storage: Invalid value: 'lots'",
        ),
        (
            "{kind: PersistentVolume, metadata: {name: p}, spec: {capacity: {storage: -1Gi}, accessModes: [RWO]}}",
            "spec.capacity.storage: Invalid value: '-1Gi': must be greater than or equal to 0",
        ),
        (
            "{kind: PersistentVolume, metadata: {name: p}, spec: {accessModes: [ReadWriteOnce]}}",
            "spec.capacity.storage: Required",
        ),
        ("{kind: PersistentVolume, spec: {capacity: {storage: 1Gi}}}", "metadata.name: Required value"),
        (
            "{kind: PersistentVolume, metadata: {name: p}, spec: {capacity: {storage: 1Gi}}}",
            "spec.accessModes: Required",
        ),
        (
            "{kind: PersistentVolume, metadata: {name: p}, spec: {capacity: {storage: [1]}}}",
            "PersistentVolume: spec.capacity.storage: expected a quantity, got list",
        ),
        (
            "{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce]}}",
            "spec.resources.requests.storage: Required value",
        ),
        (
            "{kind: PersistentVolumeClaim, metadata: {name: c},"
            " spec: {accessModes: [Sometimes], resources: {requests: {storage: 1Gi}}}}",
            'spec.accessModes[0]: Unsupported value: "Sometimes"',
        ),
        (
            "{kind: PersistentVolumeClaim, metadata: {name: c},"
            " spec: {accessModes: [ReadWriteOnce], volumeMode: Tape, resources: {requests: {storage: 1Gi}}}}",
            'spec.volumeMode: Unsupported value: "Tape"',
        ),
        (
            "{kind: StorageClass, metadata: {name: s}, volumeBindingMode: Later}",
            'volumeBindingMode: Unsupported value: "Later": supported values: Immediate, WaitForFirstConsumer',
        ),
        (
            "{kind: CSINode, metadata: {name: n}, spec: {drivers: [{nodeID: x}]}}",
            "spec.drivers[0].name: Required value",
        ),
        (
            "{kind: CSINode, metadata: {name: n}, spec: {drivers: [{name: d, allocatable: {count: -3}}]}}",
            "spec.drivers[0].allocatable.count: Invalid value: -3: must be non-negative",
        ),
        ("{kind: CSINode, metadata: {name: n}, spec: {drivers: {name: d}}}", "at `$.spec.drivers`"),
    ],
)
def test_hostile_storage_objects_are_refused_with_the_field(tmp_path: Path, item: str, message: str) -> None:
    with pytest.raises(ClusterFileError) as err:
        read_cluster(write(tmp_path, f"- {item}\n"))
    assert message in str(err.value) and str(err.value).startswith(str(tmp_path))
