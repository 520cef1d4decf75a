"""A cluster file as the extender's node source (`extender serve --nodes FILE`)."""

from __future__ import annotations

from pathlib import Path

from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.files import load_into

FILE = """\
- kind: Node
  metadata: {name: n1}
  status: {allocatable: {cpu: "8", pods: "10"}}
- kind: Pod
  metadata: {name: a, namespace: ns}
  spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: "2"}}}]}
- kind: Pod
  metadata: {name: b, namespace: ns}
  spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: "3"}}}]}
- kind: Pod
  metadata: {name: pending, namespace: ns}
  spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
"""


def test_pods_without_uids_are_each_counted_on_their_node(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(FILE)
    cache = ClusterCache()
    assert load_into(cache, path) == (1, 3)
    row = cache.table.index["n1"]
    assert sorted(p.name for p in cache.table.pods_on(row).values()) == ["a", "b"]
    assert cache.table.requested_at("cpu", row) == 5000
