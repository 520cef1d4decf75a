"""The admin's calls to the test control plane's kube-apiserver: raw requests, fake nodes, namespaces.

`AdminAPI` is a base of `ControlPlane` (controlplane.py): everything here goes through its admin httpx
``client``; a non-2xx answer raises the cluster client's `APIError` (with ``body``). See docs/control-plane.md.
"""

from __future__ import annotations

import json as jsonlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from kubesched.cluster.kubeclient import APIError
from kubesched.testing.nodes import node_manifest, node_status


class AdminAPI:
    """kube-apiserver calls as the admin, over ``client`` (the control plane's, once started)."""

    @property
    def client(self) -> httpx.Client:
        raise NotImplementedError

    def api(
        self,
        method: str,
        path: str,
        json: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str | None = None,
    ) -> Any:
        """Call the apiserver as admin; return the decoded JSON (or text); raise `APIError` on >= 400.

        PATCH defaults to a JSON merge patch.
        """
        headers = {}
        if method.upper() == "PATCH":
            headers["Content-Type"] = content_type or "application/merge-patch+json"
        elif content_type:
            headers["Content-Type"] = content_type
        content = None if json is None else jsonlib.dumps(json).encode()
        if content is not None and "Content-Type" not in headers:
            headers["Content-Type"] = "application/json"
        resp = self.client.request(method, path, content=content, params=params, headers=headers)
        try:
            body: Any = resp.json()
        except ValueError:
            body = resp.text
        if resp.status_code >= 400:
            message = body.get("message", body) if isinstance(body, dict) else body
            reason = str(body.get("reason", "")) if isinstance(body, dict) else ""
            raise APIError(resp.status_code, str(message), reason, request=f"{method} {path}", body=body)
        return body

    def service_account_can(
        self, account_namespace: str, account: str, verb: str, resource: str, *, namespace: str, **attributes: str
    ) -> bool:
        """Whether ServiceAccount ``account_namespace/account`` may ``verb`` ``resource`` in ``namespace``, as the
        API server's authorizer answers a SubjectAccessReview for its token's user and groups. ``attributes``:
        more resourceAttributes (``group``, ``subresource``, ``name``)."""
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{account_namespace}", "system:authenticated"]
        resource_attributes = {"namespace": namespace, "verb": verb, "group": "", "resource": resource, **attributes}
        spec = {
            "user": f"system:serviceaccount:{account_namespace}:{account}",
            "groups": groups,
            "resourceAttributes": resource_attributes,
        }
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        answer = self.api("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
        return bool(answer["status"].get("allowed", False))

    def get_or_none(self, path: str) -> Any:
        """GET ``path`` (decoded JSON), or None when the API server answers 404."""
        try:
            return self.api("GET", path)
        except APIError as err:
            if err.status == 404:
                return None
            raise

    def create_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, Any]] = (),
        allocatable: Mapping[str, str] | None = None,
        capacity: Mapping[str, str] | None = None,
        unschedulable: bool = False,
    ) -> Any:
        """Register a fake Ready node (default 8 cpu, 32Gi, 110 pods); return it as stored, status included.

        The status is written through ``nodes/<name>/status``, as a kubelet does: the create may drop it.
        """
        manifest = node_manifest(name, labels=labels, taints=taints, unschedulable=unschedulable)
        return self.create_node_object(manifest, node_status(name, allocatable=allocatable, capacity=capacity))

    def create_node_object(self, manifest: Mapping[str, Any], status: Mapping[str, Any]) -> Any:
        """POST a Node (without status), then merge-patch ``status`` (``{"status": {...}}``) through the status
        subresource; both with strict field validation, so an unknown field is an APIError naming it."""
        body = {k: v for k, v in manifest.items() if k != "status"}
        name = body["metadata"]["name"]
        strict = {"fieldValidation": "Strict"}
        self.api("POST", "/api/v1/nodes", body, params=strict)
        return self.api("PATCH", f"/api/v1/nodes/{name}/status", dict(status), params=strict)

    def delete_node(self, name: str, *, missing_ok: bool = True) -> None:
        """Delete a node (pods bound to it stay; delete them or their namespace too)."""
        try:
            self.api("DELETE", f"/api/v1/nodes/{name}")
        except APIError as err:
            if not (missing_ok and err.status == 404):
                raise

    def create_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> Any:
        """Create a namespace."""
        meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
        return self.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    def delete_namespace(self, name: str, *, timeout: float = 30.0) -> None:
        """Delete a namespace for good, doing the namespace controller's job (none runs here).

        Pods go first with grace period 0: without a kubelet a bound pod would otherwise stay "terminating"
        and keep holding its node's resources in the scheduler's cache.
        """
        if self.get_or_none(f"/api/v1/namespaces/{name}") is None:
            return
        self.api("DELETE", f"/api/v1/namespaces/{name}/pods", params={"gracePeriodSeconds": "0"})
        ns = self.api("DELETE", f"/api/v1/namespaces/{name}")
        if ns.get("kind") == "Namespace":  # still there, terminating: clear spec.finalizers like the controller
            ns["spec"]["finalizers"] = []
            self._ignore_404("PUT", f"/api/v1/namespaces/{name}/finalize", ns)
            self._ignore_404("DELETE", f"/api/v1/namespaces/{name}")
        deadline = time.monotonic() + timeout
        while self.get_or_none(f"/api/v1/namespaces/{name}") is not None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"namespace {name} still exists after {timeout:.0f}s")
            time.sleep(0.1)

    def _ignore_404(self, method: str, path: str, json: Any = None) -> None:
        try:
            self.api(method, path, json)
        except APIError as err:
            if err.status != 404:
                raise
