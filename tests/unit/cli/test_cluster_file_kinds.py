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
