"""The example user policy of docs/extender.md loads by path and serves through the same core."""

from __future__ import annotations

import json
from pathlib import Path

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.extender.service import ExtenderService
from kubesched.framework.runtime import Framework
from kubesched.policies import load, registry_for
from kubesched.testing.builders import make_node

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "licensed_policy.py"


def _node(name: str, zone: str) -> Node:
    return make_node(
        name, alloc={"cpu": "4", "memory": "8Gi", "pods": "10"}, labels={"topology.kubernetes.io/zone": zone}
    )


def test_example_policy_filters_by_zone() -> None:
    policy = load(str(EXAMPLE))
    assert policy.name == "licensed"
    assert [m.name for m in policy.managed_resources] == ["example.com/licence"]
    cache = ClusterCache()
    cache.replace_nodes([_node("a", "zone-a"), _node("c", "zone-c"), _node("b", "zone-b")])
    cache.synced.set()
    service = ExtenderService(policy, Framework.build(policy.profile, registry_for(policy)), cache)
    pod = {"metadata": {"name": "p", "namespace": "d", "uid": "u"}, "spec": {"containers": [{"name": "c"}]}}
    out = json.loads(service.filter(json.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["a", "b", "c"]}).encode()))
    assert out["NodeNames"] == ["a", "b"]
    assert out["FailedAndUnresolvableNodes"] == {"c": "node(s) are in an unlicensed zone"}
