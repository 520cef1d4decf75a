"""`scheduler run --cluster` with the kinds plugins read: namespace labels for namespaceSelector, PDBs, classes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli.main import main

NODES = """
kind: NodeList
items:
- metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
- metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
---
kind: Namespace
metadata: {name: data, labels: {team: data}}
---
kind: Pod
metadata: {name: db, namespace: data, uid: db, labels: {app: db}}
spec: {nodeName: n1, containers: [{name: c}]}
"""


def placements(capsys: pytest.CaptureFixture[str], tmp_path: Path, pending: str) -> dict[str, str | None]:
    path = tmp_path / "cluster.yaml"
    path.write_text(NODES + "---\n" + pending)
    code = main(["scheduler", "run", "--cluster", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {p["pod"]: p["node"] for p in json.loads(out)["placements"]}


def term(kind: str) -> str:
    return (
        f"affinity: {{{kind}: {{requiredDuringSchedulingIgnoredDuringExecution: [{{"
        "labelSelector: {matchLabels: {app: db}}, namespaceSelector: {matchLabels: {team: data}},"
        " topologyKey: kubernetes.io/hostname}]}}"
    )


def pending_pod(affinity: str) -> str:
    meta = "{name: web, namespace: shop, uid: web}"
    return f"kind: Pod\nmetadata: {meta}\nspec: {{containers: [{{name: c}}], {affinity}}}\n"


def test_affinity_by_namespace_labels_finds_the_pods_of_the_labelled_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    web = pending_pod(term("podAffinity"))
    assert placements(capsys, tmp_path, web) == {"shop/web": "n1"}


def test_anti_affinity_by_namespace_labels_keeps_away_from_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    web = pending_pod(term("podAntiAffinity"))
    assert placements(capsys, tmp_path, web) == {"shop/web": "n2"}


DRA = """
kind: DeviceClass
apiVersion: resource.k8s.io/v1
metadata: {name: gpu}
spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}
---
kind: ResourceSlice
apiVersion: resource.k8s.io/v1
metadata: {name: n2-gpus}
spec:
  driver: gpu.example.com
  nodeName: n2
  pool: {name: n2, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0, capacity: {memory: {value: 80Gi}}}]
---
kind: ResourceClaim
apiVersion: resource.k8s.io/v1
metadata: {name: big, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu
        selectors: [{cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'}}]
---
kind: Pod
metadata: {name: trainer, namespace: ml, uid: trainer}
spec: {containers: [{name: c}], resourceClaims: [{name: gpu, resourceClaimName: big}]}
---
kind: Pod
metadata: {name: orphan, namespace: ml, uid: orphan}
spec: {containers: [{name: c}], resourceClaims: [{name: gpu, resourceClaimName: gone}]}
"""


def test_dynamic_resources_from_a_cluster_file_allocate_in_memory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(NODES + "---\n" + DRA)
    assert main(["scheduler", "run", "--cluster", str(path), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["placements"] == [
        {"pod": "ml/trainer", "node": "n2", "reason": None},
        {"pod": "ml/orphan", "node": None, "reason": 'could not find ResourceClaim "ml/gone"'},
    ]
    assert out["claims"] == [{"claim": "ml/big", "devices": ["gpu.example.com/n2/gpu-0"], "reservedFor": ["trainer"]}]


def test_a_dra_object_without_a_name_is_refused_with_its_place(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(NODES + "---\nkind: DeviceClass\nmetadata: {}\n")
    assert main(["scheduler", "run", "--cluster", str(path)]) == 2
    assert "document 3: DeviceClass has no metadata.name" in capsys.readouterr().err
