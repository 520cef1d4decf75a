"""With the webhook's pods gone, the cluster can still create the pods that bring them back.

The objects `kubesched manifests webhook` renders for a rule that can deny any pod (failurePolicy Fail) are created
on the harness's real kube-apiserver. No controller or kubelet runs, so the webhook's Deployment has no pods and its
Service no endpoints: every call the API server makes to the webhook fails. Then the webhook's own replacement pod
(its Deployment's pod template) is created in the release namespace, in a namespace without the opt-in label (as
cert-manager's, a CNI's), and in one with it, where alone failurePolicy Fail holds and the pod is refused.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser
from kubesched.cluster.kubeclient import APIError
from kubesched.deploy import render, webhook
from kubesched.testing.controlplane import ControlPlane

pytestmark = pytest.mark.controlplane

Obj = dict[str, Any]
RUN = uuid.uuid4().hex[:8]
RELEASE = f"ksl-{RUN}"
RULES = "def check(pod, request):\n    return None\n"
CONFIG = "apiVersion: kubesched.io/v1alpha1\nkind: WebhookConfig\nrules:\n- {name: team, python: rules.py:check}\n"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def _path(obj: Obj) -> str:
    version, kind, ns = obj["apiVersion"], obj["kind"], obj["metadata"].get("namespace")
    base = "/api/v1" if version == "v1" else f"/apis/{version}"
    plural = kind.lower() + "s"  # every kind the webhook renders
    return f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Obj]]:
    """The rendered webhook (python rule: Fail), every object created, no pod running."""
    tmp: Path = tmp_path_factory.mktemp("lockout")
    (tmp / "rules.py").write_text(RULES)
    (tmp / "webhook.yaml").write_text(CONFIG)
    argv = ["manifests", "webhook", "--namespace", RELEASE, "--generate-certs", "--webhook-timeout", "2"]
    args = build_parser().parse_args([*argv, "--webhook-config", str(tmp / "webhook.yaml")])
    objects = render.render(manifests_cmd.build_plan(args))
    created: list[str] = []
    try:
        for obj in objects:
            control_plane.api("POST", _path(obj), obj)
            if "namespace" not in obj["metadata"] and obj["kind"] != "Namespace":
                created.insert(0, f"{_path(obj)}/{obj['metadata']['name']}")
        yield objects
    finally:
        for path in created:  # the webhook configurations first: nothing else may be judged by them afterwards
            with contextlib.suppress(APIError):
                control_plane.api("DELETE", path)
        control_plane.delete_namespace(RELEASE)


def _replacement_pod(objects: list[Obj], name: str) -> Obj:
    """What the ReplicaSet would create to bring the webhook back: its Deployment's pod template."""
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**template["metadata"], "name": name},
        "spec": template["spec"],
    }


def _create(cp: ControlPlane, namespace: str, pod: Obj) -> str | None:
    """None when the pod is created, else the API server's message."""
    try:
        cp.api("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    except APIError as err:
        return str(err.body.get("message")) if isinstance(err.body, dict) else str(err.body)
    return None


def test_the_rendering_is_fail_closed_only_under_the_label(installed: list[Obj]) -> None:
    (validating,) = [o for o in installed if o["kind"] == "ValidatingWebhookConfiguration"]
    policies = {h["name"]: h["failurePolicy"] for h in validating["webhooks"]}
    assert policies == {webhook.VALIDATE_NAME: "Ignore", webhook.FAIL_CLOSED_NAME: "Fail"}


def test_with_the_webhook_down_the_pods_that_bring_it_back_are_created(
    control_plane: ControlPlane, installed: list[Obj], kube_namespace: str
) -> None:
    cp = control_plane
    endpoints = cp.get_or_none(f"/api/v1/namespaces/{RELEASE}/endpoints/{webhook.WEBHOOK}")
    assert not (endpoints or {}).get("subsets"), "the webhook must have no endpoints here"
    assert cp.api("GET", f"/api/v1/namespaces/{RELEASE}/services/{webhook.WEBHOOK}")  # the Service is there
    labelled = f"{kube_namespace}-strict"
    cp.create_namespace(labelled, labels={"kubesched.io/webhook": "enabled"})
    try:
        pod = _replacement_pod(installed, "replacement")
        # The fail-closed hook is registered: in the opted-in namespace the dead webhook refuses pods...
        deadline = time.monotonic() + 30
        while (refused := _create(cp, labelled, pod)) is None and time.monotonic() < deadline:
            cp.api("DELETE", f"/api/v1/namespaces/{labelled}/pods/replacement", params={"gracePeriodSeconds": "0"})
            time.sleep(0.5)  # the API server's webhook informer has not seen the configuration yet
        assert refused is not None, "a pod was admitted in the opted-in namespace with the webhook down"
        assert f'failed calling webhook "{webhook.FAIL_CLOSED_NAME}"' in refused, refused
        # ... while the webhook's own namespace and every namespace without the label still admit them.
        assert _create(cp, RELEASE, pod) is None
        started = time.monotonic()
        assert _create(cp, kube_namespace, pod) is None
        # Judged by the fail-open hook: its call fails, then the pod is admitted (within the 2 s timeout).
        assert time.monotonic() - started < 10
        created = cp.api("GET", f"/api/v1/namespaces/{RELEASE}/pods/replacement")
        assert created["spec"]["priorityClassName"] == "system-cluster-critical"
    finally:
        cp.delete_namespace(labelled)
