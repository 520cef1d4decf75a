"""Builders for webhook tests: AdmissionReview bodies, an app over a YAML config, an RFC 6902 applier."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import yaml

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.testing.builders import node_json, pod_manifest
from kubesched.webhook import rules_file as config
from kubesched.webhook.app import WebhookApp
from kubesched.webhook.service import AdmissionService

Json = dict[str, Any]


def node(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    taints: Sequence[Json] = (),
    cpu: str = "4",
    memory: str = "8Gi",
    unschedulable: bool = False,
) -> Json:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    all_labels = {"kubernetes.io/hostname": name, **(labels or {})}
    return node_json(name, labels=all_labels, alloc=alloc, taints=taints, unschedulable=unschedulable)


NODES = [
    node("small", labels={"pool": "general"}, cpu="2"),
    node("big", labels={"pool": "general"}, cpu="16", memory="64Gi"),
    node("gpu", labels={"pool": "gpu"}, cpu="8", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
]


def pod(name: str = "p", *, labels: dict[str, str] | None = None, cpu: str | None = None, **spec: Any) -> Json:
    """A pod as the API server sends it to admission (schedulerName already defaulted)."""
    requests = {"cpu": cpu} if cpu is not None else None
    return pod_manifest(
        name,
        namespace="team-a",
        scheduler=spec.pop("schedulerName", "default-scheduler"),
        labels=labels,
        requests=requests,
        **spec,
    )


def review(
    obj: Any, *, operation: str = "CREATE", namespace: str = "team-a", uid: str = "uid-1", **request: Any
) -> Json:
    req: Json = {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["devs"]},
        "object": obj,
        "dryRun": False,
        **request,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def make_app(text: str, nodes: Sequence[Json] = NODES, base: Path = Path(".")) -> WebhookApp:
    cache = ClusterCache()
    built = config.parse(yaml.safe_load(text), cache, base=base, source="test.yaml")
    cache.replace_nodes(msgspec.convert(n, Node) for n in nodes)
    cache.synced.set()
    return WebhookApp(AdmissionService(built), cache, max_body=64 * 1024)


async def send(app: WebhookApp, method: str, path: str, content: bytes = b"") -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://hook") as client:
        return await client.request(method, path, content=content)


async def call(app: WebhookApp, path: str, obj: Any, **kw: Any) -> Json:
    """POST a review of ``obj``; the `response` part, after checking the envelope and the uid."""
    r = await send(app, "POST", path, json.dumps(review(obj, **kw)).encode())
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"apiVersion", "kind", "response"}
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == kw.get("uid", "uid-1")
    response: Json = body["response"]
    return response


def patched(obj: Json, response: Json) -> Json:
    """``obj`` after the response's patch (unchanged when there is none)."""
    if "patch" not in response:
        assert "patchType" not in response
        return obj
    assert response["patchType"] == "JSONPatch"
    return apply_patch(obj, json.loads(base64.b64decode(response["patch"])))


# ---- a small RFC 6902 applier, independent of the code under test -------------------------------


def _tokens(pointer: str) -> list[str]:
    assert pointer == "" or pointer.startswith("/"), pointer
    # RFC 6901: decode ~1 before ~0, so "~01" becomes "~1" and not "/".
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def apply_patch(doc: Any, ops: list[Json]) -> Any:
    doc = copy.deepcopy(doc)
    for op in ops:
        tokens = _tokens(op["path"])
        if not tokens:
            assert op["op"] == "replace"
            doc = copy.deepcopy(op["value"])
            continue
        parent = doc
        for t in tokens[:-1]:
            parent = parent[int(t)] if isinstance(parent, list) else parent[t]
        last = tokens[-1]
        kind = op["op"]
        if isinstance(parent, list):
            if kind == "add":
                index = len(parent) if last == "-" else int(last)
                assert 0 <= index <= len(parent)
                parent.insert(index, copy.deepcopy(op["value"]))
            elif kind == "replace":
                parent[int(last)] = copy.deepcopy(op["value"])
            else:
                assert kind == "remove"
                del parent[int(last)]
        else:
            assert isinstance(parent, dict), f"{op['path']}: parent is not an object"
            if kind == "add":
                parent[last] = copy.deepcopy(op["value"])  # add on an existing member replaces it (RFC 6902 4.1)
            elif kind == "replace":
                assert last in parent, f"replace of a missing member {op['path']}"
                parent[last] = copy.deepcopy(op["value"])
            else:
                assert kind == "remove" and last in parent, op
                del parent[last]
    return doc


@pytest.fixture
def tmp_rules(tmp_path: Path) -> Path:
    """A user rules file in a temp dir."""
    (tmp_path / "rules.py").write_text(RULES_PY)
    return tmp_path


RULES_PY = """
from kubesched.webhook.rules import Verdict


def needs_team(pod, request):
    if "team" not in (pod["metadata"].get("labels") or {}):
        return Verdict.deny(f"{request.user_info.username}: every pod needs a team label")
    return None


async def warn_dry_run(pod, request):
    return Verdict.warn("dry run") if request.dry_run else Verdict.allow()


def add_owner(pod, request):
    pod["metadata"].setdefault("annotations", {})["example.com/owner"] = request.user_info.username
    return None


def scribble(pod, request):
    pod["spec"]["schedulerName"] = "nobody"   # a validating rule's changes are ignored


def boom(pod, request):
    raise RuntimeError("rule bug")


def wrong(pod, request):
    return "yes"
"""
