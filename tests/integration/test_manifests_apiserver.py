"""`kubesched manifests` against the real kube-apiserver of the harness.

Every rendered object of every mode is accepted by a server-side dry run (strict field validation, no warnings:
no unknown field, nothing the namespace's `restricted` Pod Security level would refuse). The RBAC is then applied
for real and checked with SubjectAccessReviews; the real kube-scheduler and the kubesched scheduler run with the
rendered configs under their ServiceAccounts' identities and take their Leases.

All of it lives in one namespace unique to this run (created from the rendered Namespace object, deleted at the
end); cluster-scoped names carry that namespace, and the ones created for real are deleted too.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser
from kubesched.cluster.kubeclient import APIError
from kubesched.deploy import extender, render, scheduler
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import wait_until

pytestmark = pytest.mark.controlplane

Obj = dict[str, Any]
RUN = uuid.uuid4().hex[:8]
NS = f"ksd-{RUN}"  # short: the ServiceAccounts' user names are client-certificate CNs here (64 characters at most)
# Scheduler names no other test uses: the schedulers started here must not take anyone else's pods.
NAMES = ("--scheduler-name", f"ks-deploy-{RUN}", "--extender-scheduler-name", f"ks-deploy-ext-{RUN}")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def rendered(mode: str, *argv: str) -> list[Obj]:
    """What `kubesched manifests MODE --namespace NS ...` prints, as objects."""
    names = NAMES if mode == "all" else NAMES[:2]
    args = build_parser().parse_args(["manifests", mode, "--namespace", NS, *names, *argv])
    return render.render(manifests_cmd.build_plan(args))


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    (obj,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


class Endpoints:
    """Collection URLs from the API server's own discovery: the right endpoint for any kind we render."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.groups: dict[str, list[Obj]] = {}

    def collection(self, obj: Obj) -> str:
        version = obj["apiVersion"]
        base = "/api/v1" if version == "v1" else f"/apis/{version}"
        if version not in self.groups:
            self.groups[version] = self.cp.api("GET", base)["resources"]
        (resource,) = [r for r in self.groups[version] if r["kind"] == obj["kind"] and "/" not in r["name"]]
        namespace = obj["metadata"].get("namespace")
        assert resource["namespaced"] == (namespace is not None), f"{obj['kind']}: namespace {namespace!r}"
        return f"{base}/namespaces/{namespace}/{resource['name']}" if namespace else f"{base}/{resource['name']}"


class Cluster:
    """The namespace of this module, and the objects created for real (deleted at the end)."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.endpoints = Endpoints(cp)
        self.created: list[str] = []

    def dry_run(self, obj: Obj) -> httpx.Response:
        params = {"dryRun": "All", "fieldValidation": "Strict"}
        return self.cp.client.post(self.endpoints.collection(obj), json=obj, params=params)

    def apply(self, obj: Obj) -> None:
        """Create, or replace what an earlier test created."""
        collection = self.endpoints.collection(obj)
        path = f"{collection}/{obj['metadata']['name']}"
        try:
            self.cp.api("POST", collection, obj)
        except APIError as err:
            if err.status != 409:
                raise
            current = self.cp.api("GET", path)
            body = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
            self.cp.api("PUT", path, body)
        if path not in self.created:
            self.created.append(path)

    def can(self, account: str, verb: str, resource: str, *, namespace: str = NS, **attributes: str) -> bool:
        """SubjectAccessReview for a ServiceAccount of ours (as the API server sees its token's user)."""
        return self.cp.service_account_can(NS, account, verb, resource, namespace=namespace, **attributes)

    def expect(self, account: str, allowed: bool, verb: str, resource: str, **attributes: str) -> None:
        # The RBAC authorizer follows bindings through informers: give a new grant a moment to arrive.
        what = f"{account} {'may' if allowed else 'may not'} {verb} {resource} {attributes}"
        wait_until(lambda: self.can(account, verb, resource, **attributes) == allowed, what, within=10)


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> Iterator[Cluster]:
    """The rendered Namespace, dry-run then created for real; everything created here is deleted afterwards."""
    c = Cluster(control_plane)
    namespace = rendered("scheduler")[0]
    assert namespace["kind"] == "Namespace" and namespace["metadata"]["name"] == NS
    response = c.dry_run(namespace)
    assert response.status_code == 201, response.text
    control_plane.api("POST", "/api/v1/namespaces", namespace)
    try:
        yield c
    finally:
        for path in reversed(c.created):
            if "/namespaces/" + NS + "/" not in path:
                with contextlib.suppress(APIError):
                    control_plane.api("DELETE", path)
        control_plane.delete_namespace(NS)


@pytest.mark.parametrize(
    "argv",
    [
        ("extender",),
        ("extender", "--bind", "--generate-certs", "--policy", str(EXAMPLES / "licensed_policy.py"), "--load-plugins"),
        ("extender", "--watch-pods", "no"),
        ("scheduler",),
        ("webhook", "--generate-certs"),
        ("webhook", "--generate-certs", "--webhook-config", str(EXAMPLES / "webhook-config.yaml")),
        ("all", "--generate-certs", "--bind", "--exclude-namespace", "monitoring"),
        ("webhook", "--generate-certs", "--webhook-managed-resource", "nvidia.com/gpu"),
    ],
    ids=lambda argv: "-".join(a.lstrip("-").rsplit("/", 1)[-1] for a in argv),
)
def test_every_rendered_object_is_accepted_by_the_api_server(cluster: Cluster, argv: tuple[str, ...]) -> None:
    objects = rendered(*argv)
    assert objects[0]["kind"] == "Namespace"  # accepted and created by the fixture
    for obj in objects[1:]:
        response = cluster.dry_run(obj)
        what = f"{obj['kind']} {obj['metadata']['name']}"
        assert response.status_code == 201, f"{what}: {response.status_code} {response.text}"
        assert response.headers.get_list("warning") == [], f"{what}: warnings"
        created = response.json()
        assert created["metadata"]["name"] == obj["metadata"]["name"]
        if obj["kind"].endswith("WebhookConfiguration"):  # the server kept what we wrote (no defaulting surprises)
            assert created["webhooks"][0]["failurePolicy"] == obj["webhooks"][0]["failurePolicy"]
            assert created["webhooks"][0]["namespaceSelector"] == obj["webhooks"][0]["namespaceSelector"]


def test_rbac_grants_each_component_only_what_it_needs(cluster: Cluster) -> None:
    objects = rendered("all", "--generate-certs")  # binding not enabled
    for obj in objects:
        if obj["kind"] in RBAC_KINDS:
            cluster.apply(obj)
    ext, ext_sched, sched, hook = extender.EXTENDER, extender.SCHEDULER, scheduler.SCHEDULER, "kubesched-webhook"
    cluster.expect(ext, True, "list", "nodes")
    cluster.expect(ext, True, "watch", "pods")  # --watch-pods auto: plugins may read them (custom-label's usage)
    cluster.expect(ext, False, "create", "pods", subresource="binding")
    cluster.expect(ext, False, "delete", "pods")
    cluster.expect(ext, False, "get", "secrets")

    cluster.expect(sched, True, "create", "pods", subresource="binding")
    cluster.expect(sched, True, "patch", "pods", subresource="status")
    cluster.expect(sched, True, "delete", "pods")
    cluster.expect(sched, True, "list", "poddisruptionbudgets", group="policy")
    cluster.expect(sched, True, "watch", "services")
    cluster.expect(sched, True, "list", "replicasets", group="apps")
    cluster.expect(sched, True, "watch", "statefulsets", group="apps")
    cluster.expect(sched, False, "update", "replicasets", group="apps")
    cluster.expect(sched, True, "create", "events", group="events.k8s.io")
    cluster.expect(sched, True, "update", "leases", group="coordination.k8s.io", name=sched)
    cluster.expect(sched, False, "update", "leases", group="coordination.k8s.io", name="kube-scheduler")
    cluster.expect(sched, False, "update", "pods")
    cluster.expect(sched, False, "get", "secrets")
    # The volume plugins: watches of storage, and VolumeBinding's two patches at PreBind.
    cluster.expect(sched, True, "watch", "persistentvolumes")
    cluster.expect(sched, True, "patch", "persistentvolumeclaims")
    cluster.expect(sched, True, "list", "csinodes", group="storage.k8s.io")
    cluster.expect(sched, True, "watch", "storageclasses", group="storage.k8s.io")
    cluster.expect(sched, False, "delete", "persistentvolumes")
    cluster.expect(sched, False, "update", "storageclasses", group="storage.k8s.io")

    cluster.expect(ext_sched, True, "update", "leases", group="coordination.k8s.io", name=ext_sched)
    cluster.expect(ext_sched, False, "update", "leases", group="coordination.k8s.io", name=sched)
    reader = {"namespace": "kube-system", "name": "extension-apiserver-authentication"}
    cluster.expect(ext_sched, True, "get", "configmaps", **reader)
    cluster.expect(ext_sched, True, "create", "pods", subresource="binding")  # system:kube-scheduler

    cluster.expect(hook, True, "watch", "nodes")  # the default rules check feasibility
    cluster.expect(hook, False, "list", "pods")

    # --webhook-managed-resource: the webhook counts requests per node from the pods; reading them, nothing more.
    managed = rendered("webhook", "--generate-certs", "--webhook-managed-resource", "nvidia.com/gpu")
    for obj in managed:
        if obj["kind"] in RBAC_KINDS:
            cluster.apply(obj)
    for verb in ("get", "list", "watch"):
        cluster.expect(hook, True, verb, "pods")
    cluster.expect(hook, True, "list", "nodes")
    for verb in ("create", "update", "delete"):
        cluster.expect(hook, False, verb, "pods")
    cluster.expect(hook, False, "create", "pods", subresource="binding")
    cluster.expect(hook, False, "get", "secrets")
    for obj in objects:  # without the flag again: the grant goes with it
        if obj["kind"] == "ClusterRole" and obj["metadata"]["name"].startswith("kubesched-webhook"):
            cluster.apply(obj)
    cluster.expect(hook, False, "watch", "pods")
    cluster.expect(hook, True, "watch", "nodes")

    for obj in rendered("extender", "--bind", "--generate-certs"):
        if obj["kind"] == "ClusterRole":
            cluster.apply(obj)
    cluster.expect(ext, True, "create", "pods", subresource="binding")
    cluster.expect(ext, False, "delete", "pods")


def test_the_second_kube_scheduler_runs_with_the_rendered_config_and_rbac(
    cluster: Cluster, control_plane: ControlPlane
) -> None:
    objects = rendered("extender")
    for obj in objects:
        if obj["kind"] in RBAC_KINDS:
            cluster.apply(obj)
    config = yaml.safe_load(find(objects, "ConfigMap", extender.SCHEDULER)["data"]["config.yaml"])
    # The identity of the ServiceAccount's token, so only the rendered RBAC (plus the built-in roles) applies.
    user = f"system:serviceaccount:{NS}:{extender.SCHEDULER}"
    sched = control_plane.start_scheduler(
        config, name=f"deploy-{RUN}", identity=user, groups=["system:serviceaccounts", f"system:serviceaccounts:{NS}"]
    )
    try:
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{extender.SCHEDULER}"
        lease = wait_until(lambda: _get(control_plane, lease_path), "kube-scheduler to take its lease", within=60)
        assert lease["spec"]["holderIdentity"]
        assert "forbidden" not in sched.tail(200).lower(), sched.tail(40)
    finally:
        sched.stop()


def test_the_kubesched_scheduler_runs_with_the_rendered_config_and_rbac(
    cluster: Cluster, control_plane: ControlPlane, tmp_path: Path
) -> None:
    objects = rendered("scheduler")
    for obj in objects:
        if obj["kind"] in RBAC_KINDS:
            cluster.apply(obj)
    config = tmp_path / "config.yaml"
    config.write_text(find(objects, "ConfigMap", scheduler.SCHEDULER)["data"]["config.yaml"])
    user = f"system:serviceaccount:{NS}:{scheduler.SCHEDULER}"
    kubeconfig = control_plane.kubeconfig(user, ["system:serviceaccounts", f"system:serviceaccounts:{NS}"])
    port = free_port()
    log = tmp_path / "scheduler.log"
    cmd = [sys.executable, "-m", "kubesched", "scheduler", "run", "--config", str(config)]
    cmd += ["--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{port}", "--log-format", "text"]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{scheduler.SCHEDULER}"
        wait_until(lambda: _alive(proc, log) and _get(control_plane, lease_path), "the scheduler's lease", within=60)
        # Ready means every watch (pods, nodes, namespaces, PodDisruptionBudgets) listed under the rendered RBAC.
        wait_until(lambda: _alive(proc, log) and _ready(port), "the scheduler to be ready", within=60)
        # The other watches (storage, PDBs, workloads) are not waited for by readiness: none may be refused.
        assert "forbidden" not in log.read_text(errors="replace").lower(), log.read_text(errors="replace")[-3000:]
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _get(cp: ControlPlane, path: str) -> Obj | None:
    try:
        found: Obj = cp.api("GET", path)
    except APIError as err:
        if err.status == 404:
            return None
        raise
    return found


def _alive(proc: subprocess.Popen[bytes], log: Path) -> bool:
    if proc.poll() is not None:
        raise RuntimeError(f"the scheduler exited {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
    return True


def _ready(port: int) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    return False
