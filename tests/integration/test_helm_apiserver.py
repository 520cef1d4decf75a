"""The Helm chart installed by a real helm on the harness's real kube-apiserver.

Every object the chart renders is created (no kubelet runs the pods: the objects are what is checked), the RBAC
grants each component what it needs and no more (SubjectAccessReviews, as the API server authorizes its
ServiceAccounts), an upgrade keeps the generated webhook certificate, and `helm uninstall` removes everything,
cluster-scoped objects included.
"""

from __future__ import annotations

import base64
import contextlib
import shlex
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.cluster.kubeclient import APIError
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.waiting import wait_until
from tests.integration.test_scheduler_e2e import SchedulerProcess
from tests.unit.deploy.helm_support import CHART, ROOT, helm_binary, run_helm
from tests.unit.deploy.test_helm_values_all import EVERY_VALUE

pytestmark = pytest.mark.controlplane

Obj = dict[str, Any]
RUN = uuid.uuid4().hex[:8]
NS = f"ksh-{RUN}"
PLUGIN = "from kubesched.framework.interfaces import FilterPlugin\n\n\nclass Mine(FilterPlugin):\n    name = 'Mine'\n"
VALUES: Obj = {
    "scheduler": {
        "enabled": True,
        "config": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "pluginModules": ["mine.py:Mine"],
            "profiles": [{"schedulerName": f"ks-helm-{RUN}", "plugins": {"filter": {"enabled": [{"name": "Mine"}]}}}],
        },
        "pluginFiles": {"mine.py": PLUGIN},
    },
    "extender": {"enabled": True, "schedulerName": f"ks-helm-ext-{RUN}"},
    "webhook": {"enabled": True},
}


class Release:
    def __init__(self, cp: ControlPlane, helm: Path, workdir: Path) -> None:
        self.cp, self.helm, self.workdir = cp, helm, workdir
        self.kubeconfig = str(cp.admin_kubeconfig)
        self.installed = ""  # what `helm install` printed

    def helm_run(self, *argv: str, values: Obj | None = None) -> str:
        """helm against the harness; the API server's warnings (unknown fields, Pod Security) fail the test."""
        extra: list[str] = []
        if values is not None:
            path = self.workdir / "values.yaml"
            path.write_text(yaml.safe_dump(values))
            extra = ["-f", str(path)]
        proc = run_helm(self.helm, *argv, "--kubeconfig", self.kubeconfig, "--namespace", NS, *extra)
        warnings = [line for line in proc.stderr.splitlines() if "warning" in line.lower()]
        assert not warnings, "\n".join(warnings)
        return proc.stdout

    def objects(self) -> list[Obj]:
        return [o for o in yaml.safe_load_all(self.helm_run("get", "manifest", "kubesched")) if o]

    def path(self, obj: Obj) -> str:
        """The object's URL, its resource found by discovery."""
        version, kind, meta = obj["apiVersion"], obj["kind"], obj["metadata"]
        base = "/api/v1" if version == "v1" else f"/apis/{version}"
        resources = self.cp.api("GET", base)["resources"]
        (resource,) = [r for r in resources if r["kind"] == kind and "/" not in r["name"]]
        namespace = meta.get("namespace")
        where = f"{base}/namespaces/{namespace}/{resource['name']}" if namespace else f"{base}/{resource['name']}"
        return f"{where}/{meta['name']}"

    def get(self, obj: Obj) -> Obj | None:
        try:
            return self.cp.api("GET", self.path(obj))
        except APIError as err:
            if err.status == 404:
                return None
            raise

    def can(self, account: str, verb: str, resource: str, namespace: str = NS, **attributes: str) -> bool:
        """SubjectAccessReview for a ServiceAccount of ours (as the API server sees its token's user)."""
        return self.cp.service_account_can(NS, account, verb, resource, namespace=namespace, **attributes)

    def expect(self, account: str, allowed: bool, verb: str, resource: str, **attributes: str) -> None:
        what = f"{account} {'may' if allowed else 'may not'} {verb} {resource} {attributes}"
        wait_until(lambda: self.can(account, verb, resource, **attributes) == allowed, what, within=10)


@pytest.fixture(scope="module")
def release(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    r = Release(control_plane, helm_binary(), tmp_path_factory.mktemp("helm"))
    # As `kubesched manifests` renders the Namespace: Pod Security restricted, so any pod spec it would refuse
    # comes back as a warning when its Deployment is created.
    pss = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": pss}}
    control_plane.api("POST", "/api/v1/namespaces", namespace)
    r.installed = r.helm_run("install", "kubesched", str(CHART), values=VALUES)
    try:
        yield r
    finally:
        with contextlib.suppress(AssertionError):
            r.helm_run("uninstall", "kubesched")
        control_plane.delete_namespace(NS)


def test_every_object_of_the_chart_exists(release: Release) -> None:
    objects = release.objects()
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "ClusterRole", "ValidatingWebhookConfiguration", "NetworkPolicy", "Secret"} <= kinds
    for obj in objects:
        found = release.get(obj)
        assert found is not None, f"{obj['kind']} {obj['metadata']['name']} was not created"
        assert found["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    plugins = release.cp.api("GET", f"/api/v1/namespaces/{NS}/configmaps/kubesched-scheduler-plugins")
    assert plugins["data"] == {"mine.py": PLUGIN}
    config = release.cp.api("GET", f"/api/v1/namespaces/{NS}/configmaps/kubesched-scheduler")
    assert yaml.safe_load(config["data"]["config.yaml"])["pluginModules"] == ["/etc/kubesched/plugins/mine.py:Mine"]


def test_the_notes_tell_the_scheduler_names(release: Release) -> None:
    assert "STATUS: deployed" in release.installed
    assert f"spec.schedulerName: ks-helm-{RUN}" in release.installed
    assert f"spec.schedulerName: ks-helm-ext-{RUN}" in release.installed


def test_rbac_grants_each_component_what_it_needs(release: Release) -> None:
    sched = "kubesched-scheduler"
    release.expect(sched, True, "create", "pods", subresource="binding")
    release.expect(sched, True, "watch", "nodes")
    release.expect(sched, True, "delete", "pods")
    release.expect(sched, True, "update", "leases", group="coordination.k8s.io", name=sched)
    release.expect(sched, False, "update", "leases", group="coordination.k8s.io", name="kube-scheduler")
    release.expect(sched, False, "get", "secrets")
    ext = "kubesched-extender"
    release.expect(ext, True, "list", "nodes")
    release.expect(ext, True, "watch", "pods")  # custom-label manages a resource: usage accounting
    release.expect(ext, False, "create", "pods", subresource="binding")  # no bind
    ks = "kubesched-extender-scheduler"
    release.expect(ks, True, "create", "pods", subresource="binding")  # system:kube-scheduler
    release.expect(ks, True, "update", "leases", group="coordination.k8s.io", name=ks)
    release.expect(ks, True, "get", "configmaps", namespace="kube-system", name="extension-apiserver-authentication")
    hook = "kubesched-webhook"
    release.expect(hook, True, "watch", "nodes")
    release.expect(hook, False, "list", "pods")


def test_managed_resources_give_the_webhook_pods_read_access_and_their_args(release: Release) -> None:
    """webhook.managedResources: `webhook serve --managed-resource` in the pods, pods get/list/watch; and only then."""
    hook = "kubesched-webhook"
    values = {**VALUES, "webhook": {"enabled": True, "managedResources": ["nvidia.com/gpu"]}}
    release.helm_run("upgrade", "kubesched", str(CHART), values=values)
    try:
        for verb in ("get", "list", "watch"):
            release.expect(hook, True, verb, "pods")
        release.expect(hook, False, "delete", "pods")
        release.expect(hook, False, "create", "pods", subresource="binding")
        deployment = release.cp.api("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{hook}")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[-2:] == ["--managed-resource", "nvidia.com/gpu"], args
    finally:
        release.helm_run("upgrade", "kubesched", str(CHART), values=VALUES)
    release.expect(hook, False, "watch", "pods")
    release.expect(hook, True, "watch", "nodes")


def test_an_upgrade_keeps_the_generated_certificate(release: Release) -> None:
    def ca() -> str:
        secret = release.cp.api("GET", f"/api/v1/namespaces/{NS}/secrets/kubesched-webhook-tls")
        return str(secret["data"]["ca.crt"])

    before = ca()
    values = {**VALUES, "webhook": {"enabled": True, "timeoutSeconds": 3}}
    release.helm_run("upgrade", "kubesched", str(CHART), values=values)
    assert ca() == before
    hook = release.cp.api(
        "GET", f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kubesched-webhook.{NS}"
    )
    assert hook["webhooks"][0]["timeoutSeconds"] == 3
    assert hook["webhooks"][0]["clientConfig"]["caBundle"] == before
    assert b"BEGIN CERTIFICATE" in base64.b64decode(before)


def test_a_binding_extender_gets_its_certificates_kept_across_upgrades(release: Release) -> None:
    """extender.bind: the extender's and kube-scheduler's client certificates (one CA) are created, kube-scheduler's
    config calls it over HTTPS with them, an upgrade keeps them; watchPods no is warned about in the notes."""

    def secrets() -> dict[str, dict[str, str]]:
        names = ("kubesched-extender-tls", "kubesched-extender-scheduler-client-tls")
        return {n: release.cp.api("GET", f"/api/v1/namespaces/{NS}/secrets/{n}")["data"] for n in names}

    binding = {**VALUES, "extender": {**VALUES["extender"], "bind": True}}
    try:
        notes = release.helm_run("upgrade", "kubesched", str(CHART), values=binding)
        assert "It binds them (and only them)" in notes and "WARNING: extender.watchPods" not in notes
        first = secrets()
        serving, client = first["kubesched-extender-tls"], first["kubesched-extender-scheduler-client-tls"]
        assert serving["ca.crt"] == client["ca.crt"]
        config = release.cp.api("GET", f"/api/v1/namespaces/{NS}/configmaps/kubesched-extender-scheduler")
        (ext,) = yaml.safe_load(config["data"]["config.yaml"])["extenders"]
        assert ext["urlPrefix"] == f"https://kubesched-extender.{NS}.svc:8888" and ext["enableHTTPS"] is True
        assert ext["tlsConfig"]["caFile"] == "/etc/kubernetes/extender-tls/ca.crt"
        deployment = release.cp.api("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/kubesched-extender")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--scheduler-name") + 1] == VALUES["extender"]["schedulerName"]
        assert args[args.index("--client-ca") + 1] == "/etc/kubesched/tls/ca.crt"
        release.expect("kubesched-extender", True, "create", "pods", subresource="binding")
        blind = {**binding, "extender": {**binding["extender"], "watchPods": "no"}}
        notes = release.helm_run("upgrade", "kubesched", str(CHART), values=blind)
        assert "WARNING: extender.watchPods is no" in notes
        assert secrets() == first  # kept: kube-scheduler and the extender keep trusting each other
        release.expect("kubesched-extender", False, "watch", "pods")
    finally:
        release.helm_run("upgrade", "kubesched", str(CHART), values=VALUES)


def test_every_value_upgrades_and_passes_server_side_dry_runs(release: Release) -> None:
    """`helm upgrade` with every value set (tests/unit/deploy/every-value.yaml, metrics included, on an API
    server without the Prometheus Operator); each pod its Deployments would create is admitted by a dry-run (Pod
    Security restricted, the priority classes), and each rendered object passes a server-side apply dry-run."""
    values = yaml.safe_load(EVERY_VALUE.read_text())
    try:
        notes = release.helm_run("upgrade", "kubesched", str(CHART), values=values)
        assert "no ServiceMonitor rendered" in notes and "no PrometheusRule rendered" in notes, notes
        kinds = {o["kind"] for o in release.objects()}
        assert not kinds & {"ServiceMonitor", "PrometheusRule"} and "PodDisruptionBudget" in kinds
        replicas = {"kubesched-scheduler": 2, "kubesched-extender-scheduler": 2, "kubesched-webhook": 3}
        for name, want in replicas.items():
            deployment = release.cp.api("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")
            assert deployment["spec"]["replicas"] == want, name
        for obj in release.objects():
            if obj["kind"] == "Deployment":
                template = obj["spec"]["template"]
                meta = {**template["metadata"], "name": f"{obj['metadata']['name']}-dry-run"}
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}
                admitted = release.cp.api("POST", f"/api/v1/namespaces/{NS}/pods", pod, params={"dryRun": "All"})
                assert admitted["spec"]["priority"] >= 2_000_000_000, obj["metadata"]["name"]  # system-*-critical
        path = release.workdir / "every-value.yaml"
        path.write_text(yaml.safe_dump(values))
        rendered = run_helm(release.helm, "template", "kubesched", str(CHART), "--namespace", NS, "-f", str(path))
        objects = [o for o in yaml.safe_load_all(rendered.stdout) if o]
        assert len(objects) > 30
        for obj in objects:
            params = {"dryRun": "All", "fieldManager": "kubesched-test", "force": "true"}
            content = "application/apply-patch+yaml"  # JSON is YAML
            release.cp.api("PATCH", release.path(obj), obj, params=params, content_type=content)
    finally:
        release.helm_run("upgrade", "kubesched", str(CHART), values=VALUES)


def test_two_scheduler_replicas_elect_one_leader_with_the_charts_config_and_rbac(release: Release) -> None:
    """scheduler.replicaCount 2: two `kubesched scheduler run` processes with the deployed ConfigMap's config, each
    as the chart's ServiceAccount (its RBAC alone), hold the Lease the Role grants in turn."""
    cp, name = release.cp, "kubesched-scheduler"
    election = {"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "500ms"}
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": election,
        "profiles": [{"schedulerName": f"ks-helm-le-{RUN}"}],
    }
    values = {**VALUES, "scheduler": {"enabled": True, "replicaCount": 2, "config": config}}
    release.helm_run("upgrade", "kubesched", str(CHART), values=values)
    processes: list[SchedulerProcess] = []
    try:
        deployment = cp.api("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")
        assert deployment["spec"]["replicas"] == 2
        deployed = cp.api("GET", f"/api/v1/namespaces/{NS}/configmaps/{name}")["data"]["config.yaml"]
        assert yaml.safe_load(deployed)["leaderElection"] == {**election, "leaderElect": True, "resourceName": name,
                                                              "resourceNamespace": NS}  # fmt: skip
        path = release.workdir / "deployed.yaml"
        path.write_text(deployed)
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"]
        account = cp.kubeconfig(f"system:serviceaccount:{NS}:{name}", groups)
        for replica in ("a", "b"):
            log = release.workdir / f"replica-{replica}.log"
            processes.append(SchedulerProcess(cp, path, log, account).start())
        first, second = processes

        def holder() -> str:
            lease = cp.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}")
            return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")

        wait_until(lambda: "became the leader" in first.tail() + second.tail(), "one replica leading", within=20)
        leader, standby = (first, second) if "became the leader" in first.tail() else (second, first)
        assert holder() and "became the leader" not in standby.tail()
        before = holder()
        assert leader.stop() == 0
        wait_until(lambda: "became the leader" in standby.tail(), "the other replica taking over", within=20)
        wait_until(lambda: holder() not in ("", before), "the Lease changing hands", within=10)
    finally:
        for proc in processes:
            proc.stop()
        release.helm_run("upgrade", "kubesched", str(CHART), values=VALUES)
        with contextlib.suppress(APIError):
            cp.api("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}")


def test_the_readmes_install_command_works_without_the_prometheus_operator(
    control_plane: ControlPlane, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """README.md's two commands as written (the namespace made unique), on an API server without the CRDs."""
    text = (ROOT / "README.md").read_text()
    lines = text.replace("\\\n", " ").splitlines()
    (manifests,) = [ln for ln in lines if ln.startswith("kubesched manifests scheduler") and "--helm-values" in ln]
    (install,) = [ln for ln in lines if ln.startswith("helm install kubesched deploy/helm/kubesched")]
    argv = shlex.split(manifests.split(">")[0])[1:]
    capsys.readouterr()
    monkey = pytest.MonkeyPatch()
    monkey.chdir(ROOT)
    try:
        assert main(argv) == 0
    finally:
        monkey.undo()
    (tmp_path / "values.yaml").write_text(capsys.readouterr().out)
    namespace = f"ksr-{RUN}"
    helm_argv = shlex.split(install.replace("--namespace kubesched", f"--namespace {namespace}"))[1:]
    helm_argv = [str(tmp_path / "values.yaml") if a == "values.yaml" else a for a in helm_argv]
    helm_argv = [str(CHART) if a == "deploy/helm/kubesched" else a for a in helm_argv]
    helm, kubeconfig = helm_binary(), str(control_plane.admin_kubeconfig)
    try:
        out = run_helm(helm, *helm_argv, "--kubeconfig", kubeconfig).stdout
        assert "STATUS: deployed" in out and "no ServiceMonitor rendered" in out, out
        manifest = run_helm(helm, "get", "manifest", "kubesched", "-n", namespace, "--kubeconfig", kubeconfig).stdout
        kinds = {o["kind"] for o in yaml.safe_load_all(manifest) if o}
        assert {"Deployment", "Service"} <= kinds and not kinds & {"ServiceMonitor", "PrometheusRule"}
        assert "ConfigMap" in kinds  # the dashboard's among them
    finally:
        run_helm(helm, "uninstall", "kubesched", "-n", namespace, "--kubeconfig", kubeconfig, check=False)
        control_plane.delete_namespace(namespace)


def test_two_kube_scheduler_replicas_of_extender_mode_elect_one_leader(release: Release) -> None:
    """extender.kubeScheduler.replicaCount 2: the real kube-scheduler, twice, with the deployed config and as the
    chart's ServiceAccount: one holds the Lease <namespace>/kubesched-extender-scheduler, the other stands by."""
    cp, name = release.cp, "kubesched-extender-scheduler"
    values = {**VALUES, "extender": {**VALUES["extender"], "kubeScheduler": {"replicaCount": 2}}}
    release.helm_run("upgrade", "kubesched", str(CHART), values=values)
    started = []
    try:
        assert cp.api("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")["spec"]["replicas"] == 2
        assert cp.get_or_none(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/{name}") is not None
        config = yaml.safe_load(cp.api("GET", f"/api/v1/namespaces/{NS}/configmaps/{name}")["data"]["config.yaml"])
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"]
        for replica in ("a", "b"):
            started.append(
                cp.start_scheduler(
                    config,
                    name=f"ks-helm-{RUN}-{replica}",
                    identity=f"system:serviceaccount:{NS}:{name}",
                    groups=groups,
                )
            )

        def holder() -> str:
            lease = cp.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}")
            return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")

        def leaders() -> int:
            logs = [s.log_path.read_text(errors="replace").lower() for s in started]
            return sum("successfully acquired lease" in log for log in logs)

        wait_until(holder, "one kube-scheduler holding the Lease", within=30)
        wait_until(lambda: leaders() == 1, "one kube-scheduler saying it leads", within=10)
        time.sleep(2)  # the standby keeps retrying, in vain
        assert leaders() == 1 and all(s.running for s in started)
    finally:
        for sched in started:
            sched.stop()
        release.helm_run("upgrade", "kubesched", str(CHART), values=VALUES)
        with contextlib.suppress(APIError):
            cp.api("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}")


def _crd(kind: str) -> Obj:
    """A stand-in for the Prometheus Operator's CRD: the same group, version and kind, any content."""
    plural = kind.lower() + "s"
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
    }


def test_where_the_operator_api_is_served_the_monitoring_objects_are_installed(release: Release) -> None:
    cp = release.cp
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    present = {c["metadata"]["name"] for c in cp.api("GET", crds)["items"]}
    made = [k for k in ("ServiceMonitor", "PrometheusRule") if f"{k.lower()}s.monitoring.coreos.com" not in present]
    for kind in made:
        cp.api("POST", crds, _crd(kind))

    def served() -> bool:
        with contextlib.suppress(APIError):
            kinds = {r["kind"] for r in cp.api("GET", "/apis/monitoring.coreos.com/v1")["resources"]}
            return {"ServiceMonitor", "PrometheusRule"} <= kinds
        return False

    metrics = {"service": True, "serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}
    try:
        wait_until(served, "the monitoring CRDs served", within=30)
        notes = release.helm_run("upgrade", "kubesched", str(CHART), values={**VALUES, "metrics": metrics})
        assert "rendered: this cluster does not serve" not in notes
        base = f"/apis/monitoring.coreos.com/v1/namespaces/{NS}"
        monitor = cp.api("GET", f"{base}/servicemonitors/kubesched-webhook")
        assert monitor["spec"]["endpoints"][0]["tlsConfig"]["ca"]["configMap"]["name"] == "kubesched-webhook-ca"
        ca = cp.api("GET", f"/api/v1/namespaces/{NS}/configmaps/kubesched-webhook-ca")["data"]["ca.crt"]
        secret = cp.api("GET", f"/api/v1/namespaces/{NS}/secrets/kubesched-webhook-tls")["data"]["ca.crt"]
        assert ca == base64.b64decode(secret).decode()
        rules = cp.api("GET", f"{base}/prometheusrules/kubesched")["spec"]["groups"][0]["rules"]
        certificate = {"KubeschedServingCertificateExpiring", "KubeschedServingCertificateExpiringCritical"}
        assert {*certificate, "KubeschedServingCertificateReloadRefused"} <= {r["alert"] for r in rules}
    finally:
        release.helm_run("upgrade", "kubesched", str(CHART), values=VALUES)
        for kind in made:
            cp.api("DELETE", f"{crds}/{kind.lower()}s.monitoring.coreos.com")


def test_uninstall_removes_everything(release: Release) -> None:
    objects = release.objects()
    release.helm_run("uninstall", "kubesched")
    for obj in objects:
        wait_until(lambda obj=obj: release.get(obj) is None, f"{obj['kind']} {obj['metadata']['name']} deleted")
    release.helm_run("install", "kubesched", str(CHART), values=VALUES)  # for the fixture's own uninstall
