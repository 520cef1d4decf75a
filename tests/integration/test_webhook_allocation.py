"""`webhook serve --managed-resource`: per-node allocatable and requested amounts from the real kube-apiserver,
a bound pod's request counted, a deleted node's series gone."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.waiting import wait_until

from .test_webhook_serve import Webhook, start_webhook

pytestmark = pytest.mark.controlplane

RUN = uuid.uuid4().hex[:8]
GPU = f"example.com/gpu-{RUN}"  # unique to this run: other tests' nodes carry none
CONFIG = "rules:\n- requireLabel: {schedulerName: kubesched, label: custom}\n"  # no feasibility rule


def _series(hook: Webhook, name: str) -> dict[str, float]:
    text = httpx.get(f"{hook.url}/metrics", verify=hook.tls(), timeout=5).text
    return {
        s.labels["node"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and s.labels.get("resource") == GPU and s.labels.get("unit") == "integer"
    }


def test_managed_resources_per_node(control_plane: ControlPlane, kube_namespace: str, tmp_path: Path) -> None:
    cp, node = control_plane, f"alloc-{RUN}"
    cp.create_node(node, allocatable={"cpu": "4", "memory": "8Gi", "pods": "110", GPU: "4"})
    hook = start_webhook(
        tmp_path, CONFIG, "--kubeconfig", str(cp.admin_kubeconfig), "--managed-resource", GPU, timeout=60
    )
    try:
        alloc, req = "kubesched_webhook_node_resource_allocatable", "kubesched_webhook_node_resource_requested"
        wait_until(lambda: _series(hook, alloc).get(node) == 4, "allocatable 4 on the node")
        assert _series(hook, req).get(node) == 0
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "gpu-user"},
            "spec": {
                "nodeName": node,
                "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {GPU: "3"}}}
                ],
            },
        }
        cp.api("POST", f"/api/v1/namespaces/{kube_namespace}/pods", pod)
        wait_until(lambda: _series(hook, req).get(node) == 3, "the bound pod's 3 counted on the node")
        # The other side restarted: the watches resume and a pod created afterwards is counted.
        cp.restart_apiserver()
        ready = time.monotonic()
        pod["metadata"]["name"] = "gpu-user-2"
        pod["spec"]["containers"][0]["resources"]["limits"][GPU] = "1"
        cp.api("POST", f"/api/v1/namespaces/{kube_namespace}/pods", pod)
        wait_until(lambda: _series(hook, req).get(node) == 4, "counted after kube-apiserver restarted", within=60)
        print(f"\nkube-apiserver restarted -> webhook allocation current after {time.monotonic() - ready:.1f} s")
        cp.delete_node(node)
        wait_until(lambda: node not in _series(hook, alloc), "the deleted node's series gone")
        assert node not in _series(hook, req)
    finally:
        cp.delete_node(node)
        code = hook.stop()
    assert code == 0, hook.output()
    assert "Traceback" not in hook.output()
