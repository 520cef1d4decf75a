"""`scheduler run --cluster` with PersistentVolumes and claims: the volume plugins decide, bindings stick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli.main import main

CLUSTER = """
kind: NodeList
items:
- metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}
  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
- metadata: {name: n2, labels: {kubernetes.io/hostname: n2, topology.kubernetes.io/zone: b}}
  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
---
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
kind: PersistentVolume
metadata: {name: local-n2}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n2]}]}]
"""


def claim(name: str, sc: str = "local", extra: str = "") -> str:
    return (
        f"kind: PersistentVolumeClaim\nmetadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{accessModes: [ReadWriteOnce], storageClassName: {sc},"
        f" resources: {{requests: {{storage: 1Gi}}}}{extra}}}"
    )


def pod(name: str, *claims: str) -> str:
    vols = ", ".join(f"{{name: v{i}, persistentVolumeClaim: {{claimName: {c}}}}}" for i, c in enumerate(claims))
    meta = f"metadata: {{name: {name}, namespace: default}}"
    return f"kind: Pod\n{meta}\nspec: {{containers: [{{name: c}}], volumes: [{vols}]}}"


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *docs: str) -> dict[str, Any]:
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join([CLUSTER, *docs]))
    code = main(["scheduler", "run", "--cluster", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {p["pod"]: p["node"] or p["reason"] for p in json.loads(out)["placements"]}


def test_a_wait_for_first_consumer_claim_goes_to_its_pv_and_takes_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    got = run(capsys, tmp_path, claim("first"), claim("second"), pod("a", "first"), pod("b", "second"))
    assert got["default/a"] == "n2"  # the only PV is on n2
    # The PV is bound to the first claim now: the second finds none (and no-provisioner cannot make one).
    assert got["default/b"] == (
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_a_missing_claim_is_never_placed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    got = run(capsys, tmp_path, pod("a", "ghost"))
    # As kube-scheduler 1.35 writes it: DynamicResources' PostFilter, whose PreFilter never ran (an earlier
    # PreFilter rejected the pod), fails reading its state ("not found"), and that error ends PostFilter.
    assert got["default/a"] == '0/2 nodes are available: persistentvolumeclaim "ghost" not found. not found'


def test_an_unbound_immediate_claim_waits(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    std = "kind: StorageClass\nmetadata: {name: std}\nprovisioner: csi.example.com"
    got = run(capsys, tmp_path, std, claim("data", "std"), pod("a", "data"))
    assert got["default/a"].startswith("0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.")


def test_a_bound_claim_follows_its_pv_zone(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    zoned = (
        "kind: PersistentVolume\nmetadata: {name: zoned, labels: {topology.kubernetes.io/zone: a}}\n"
        "spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], claimRef: {namespace: default, name: data}}"
    )
    got = run(capsys, tmp_path, zoned, claim("data", "std", ", volumeName: zoned"), pod("a", "data"))
    assert got["default/a"] == "n1"


def test_a_read_write_once_pod_claim_is_taken_from_a_lower_priority_pod_by_preemption(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    solo = (
        "kind: PersistentVolumeClaim\nmetadata: {name: solo, namespace: default}\n"
        "spec: {accessModes: [ReadWriteOncePod], resources: {requests: {storage: 1Gi}}, volumeName: solo-pv}"
    )
    pv = (
        "kind: PersistentVolume\nmetadata: {name: solo-pv}\n"
        "spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOncePod], claimRef: {namespace: default, name: solo}}"
    )
    holder = (
        "kind: Pod\nmetadata: {name: holder, namespace: default, uid: h}\n"
        "spec: {nodeName: n1, priority: 1, containers: [{name: c}],"
        " volumes: [{name: v, persistentVolumeClaim: {claimName: solo}}]}"
    )
    wants = pod("wants", "solo").replace("spec: {", "spec: {priority: 100, ")
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join([CLUSTER, solo, pv, holder, wants]))
    code = main(["scheduler", "run", "--cluster", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(out)
    assert [p["pod"] for p in got["preemptions"]] == ["default/holder"]
    assert {p["pod"]: p["node"] for p in got["placements"]}["default/wants"] == "n1"
