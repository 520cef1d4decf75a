"""The shape of what `kubesched.deploy.render` emits, per mode: objects, order, wiring between them, pod hardening."""

from __future__ import annotations

import pytest
import yaml

from kubesched.config.parse import parse_document
from kubesched.config.profiles import parse as parse_scheduler_config
from kubesched.config.v1 import ManagedResource
from kubesched.config.validation import validate
from kubesched.deploy import extender, render, scheduler
from kubesched.deploy.plan import DeployError, ExtenderPlan, Plan, SchedulerPlan, WebhookTLS

from .conftest import NS, all_of, find, plan

MODES = ("extender", "scheduler", "webhook", "all")
BUILTIN_ROLES = {"system:kube-scheduler", "system:volume-scheduler", "extension-apiserver-authentication-reader"}


@pytest.mark.parametrize(
    ("mode", "deployments"),
    [
        ("extender", {"kubesched-extender", "kubesched-extender-scheduler"}),
        ("scheduler", {"kubesched-scheduler"}),
        ("webhook", {"kubesched-webhook"}),
        ("all", {"kubesched-extender", "kubesched-extender-scheduler", "kubesched-scheduler", "kubesched-webhook"}),
    ],
)
def test_each_mode_renders_its_deployments(mode: str, deployments: set[str], tls: WebhookTLS) -> None:
    objects = render.render(plan(mode, tls))
    assert {d["metadata"]["name"] for d in all_of(objects, "Deployment")} == deployments
    assert objects[0]["kind"] == "Namespace" and objects[0]["metadata"]["name"] == NS
    order = [render.KIND_ORDER.index(o["kind"]) for o in objects]
    assert order == sorted(order), "apply order: identities and RBAC first, webhook configurations last"


@pytest.mark.parametrize("mode", MODES)
def test_references_between_objects_resolve(mode: str, tls: WebhookTLS) -> None:
    objects = render.render(plan(mode, tls))
    present = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    for d in all_of(objects, "Deployment"):
        pod = d["spec"]["template"]
        assert d["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        assert ("ServiceAccount", NS, pod["spec"]["serviceAccountName"]) in present
        for volume in pod["spec"].get("volumes", []):
            if "configMap" in volume:
                assert ("ConfigMap", NS, volume["configMap"]["name"]) in present
            if "secret" in volume:
                assert ("Secret", NS, volume["secret"]["secretName"]) in present
    for b in all_of(objects, "RoleBinding") + all_of(objects, "ClusterRoleBinding"):
        for subject in b["subjects"]:
            assert ("ServiceAccount", subject["namespace"], subject["name"]) in present
        ref = b["roleRef"]
        namespace = b["metadata"].get("namespace") if ref["kind"] == "Role" else None
        assert (ref["kind"], namespace, ref["name"]) in present or ref["name"] in BUILTIN_ROLES


@pytest.mark.parametrize("mode", MODES)
def test_services_select_their_deployments_pods_and_ports(mode: str, tls: WebhookTLS) -> None:
    objects = render.render(plan(mode, tls))
    deployments = all_of(objects, "Deployment")
    for svc in all_of(objects, "Service"):
        selected = [
            d
            for d in deployments
            if svc["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert [d["metadata"]["name"] for d in selected] == [svc["metadata"]["name"]]
        container = selected[0]["spec"]["template"]["spec"]["containers"][0]
        port_names = {p["name"] for p in container["ports"]}
        assert {p["targetPort"] for p in svc["spec"]["ports"]} <= port_names


@pytest.mark.parametrize("mode", MODES)
def test_every_pod_is_hardened_with_requests_and_probes(mode: str, tls: WebhookTLS) -> None:
    for d in all_of(render.render(plan(mode, tls)), "Deployment"):
        spec = d["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (container,) = spec["containers"]
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert set(container["resources"]["requests"]) == {"cpu", "memory"}
        assert "memory" in container["resources"]["limits"]
        assert container["livenessProbe"]["httpGet"]["path"] in ("/healthz", "/livez")
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        scheme = container["readinessProbe"]["httpGet"]["scheme"]
        assert scheme == ("HTTPS" if container["ports"][0]["name"] == "https" else "HTTP")


def test_the_second_kube_scheduler_is_configured_with_kubesched_config(tls: WebhookTLS) -> None:
    objects = render.render(plan("extender", None, bind=True))
    config_yaml = find(objects, "ConfigMap", extender.SCHEDULER)["data"]["config.yaml"]
    config = parse_document(yaml.safe_load(config_yaml))
    assert validate(config) == []
    assert [p.scheduler_name for p in config.profiles] == ["kubesched-extender-scheduler"]
    assert config.leader_election is not None
    assert (config.leader_election.resource_name, config.leader_election.resource_namespace) == (
        "kubesched-extender-scheduler",
        NS,
    )
    (ext,) = config.extenders
    service = find(objects, "Service", extender.EXTENDER)
    # It binds: HTTPS, with kube-scheduler's client certificate and the CA it checks the extender's with.
    assert ext.url_prefix == f"https://{service['metadata']['name']}.{NS}.svc:{service['spec']['ports'][0]['port']}"
    assert ext.enable_https and ext.tls_config is not None
    files = (ext.tls_config.cert_file, ext.tls_config.key_file, ext.tls_config.ca_file)
    assert files == tuple(f"{extender.CLIENT_DIR}/{f}" for f in ("tls.crt", "tls.key", "ca.crt"))
    assert (ext.filter_verb, ext.prioritize_verb, ext.bind_verb, ext.node_cache_capable) == (
        "filter",
        "prioritize",
        "bind",
        True,
    )
    assert [r.name for r in ext.managed_resources] == ["example.com/custom-resource"]
    pod = find(objects, "Deployment", extender.SCHEDULER)["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "registry.k8s.io/kube-scheduler:v1.37.2"


def test_bind_verb_only_when_binding_is_enabled() -> None:
    objects = render.render(plan("extender", None, bind=False))
    config = parse_document(yaml.safe_load(find(objects, "ConfigMap", extender.SCHEDULER)["data"]["config.yaml"]))
    assert config.extenders[0].bind_verb == ""
    assert config.extenders[0].url_prefix.startswith("http://") and not config.extenders[0].enable_https


def test_the_custom_scheduler_config_is_read_by_the_scheduler_itself() -> None:
    objects = render.render(plan("scheduler", None))
    config = parse_scheduler_config(
        yaml.safe_load(find(objects, "ConfigMap", scheduler.SCHEDULER)["data"]["config.yaml"])
    )
    assert [p.scheduler_name for p in config.profiles] == ["kubesched"]
    assert (config.leader_election.resource_name, config.leader_election.resource_namespace) == (
        "kubesched-scheduler",
        NS,
    )
    args = find(objects, "Deployment", scheduler.SCHEDULER)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["scheduler", "run"] and "--in-cluster" in args and "0.0.0.0:10251" in args


def test_the_extender_serves_in_cluster_behind_a_network_policy() -> None:
    objects = render.render(plan("extender", None))
    container = find(objects, "Deployment", extender.EXTENDER)["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:4] == ["extender", "serve", "--policy", "custom-label"]
    assert "--in-cluster" in container["args"] and container["image"] == "kubesched:0.1.0"
    netpol = find(objects, "NetworkPolicy", extender.EXTENDER)
    kube_scheduler = find(objects, "Deployment", extender.SCHEDULER)["spec"]["template"]["metadata"]["labels"]
    (allowed,) = netpol["spec"]["ingress"][0]["from"]
    assert allowed["podSelector"]["matchLabels"].items() <= kube_scheduler.items()


def test_a_policy_file_is_mounted_from_a_config_map() -> None:
    ext = ExtenderPlan(policy="/etc/kubesched/policy/mine.py:policy", policy_files={"mine.py": "policy = ...\n"})
    objects = render.render(Plan(extender=ext))
    assert find(objects, "ConfigMap", "kubesched-extender-policy")["data"] == {"mine.py": "policy = ...\n"}
    pod = find(objects, "Deployment", extender.EXTENDER)["spec"]["template"]["spec"]
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert extender.POLICY_DIR in mounts
    assert (
        "kubesched.io/inputs-sha256"
        in find(objects, "Deployment", extender.EXTENDER)["spec"]["template"]["metadata"]["annotations"]
    )


def test_cluster_scoped_names_carry_the_namespace(tls: WebhookTLS) -> None:
    objects = render.render(plan("all", tls))
    for o in objects:
        if o["kind"] != "Namespace" and o["metadata"].get("namespace") in (None, "kube-system"):
            assert f".{NS}" in o["metadata"]["name"], o["metadata"]["name"]


def test_no_namespace_object_for_a_shared_namespace() -> None:
    objects = render.render(plan("scheduler", None, namespace="kube-system"))
    assert not all_of(objects, "Namespace")
    assert find(objects, "Deployment")["metadata"]["namespace"] == "kube-system"


def test_yaml_stream_and_files_round_trip(tls: WebhookTLS) -> None:
    objects = render.render(plan("all", tls))
    assert list(yaml.safe_load_all(render.stream(objects))) == objects
    files = render.files(objects)
    assert sorted(files) == list(files), "file names sort in apply order"
    assert [yaml.safe_load(text) for text in files.values()] == objects


@pytest.mark.parametrize(
    ("changed", "field"),
    [
        ({"namespace": "Not_A_Namespace"}, "namespace"),
        ({"image": "has space"}, "image"),
        ({"scheduler": SchedulerPlan("Bad Name")}, "scheduler.scheduler_name"),
        (
            {"scheduler": SchedulerPlan("same"), "extender": ExtenderPlan(scheduler_name="same")},
            "extender.scheduler_name",
        ),
        ({"extender": ExtenderPlan(policy_files={"a/b.py": ""})}, "policy_files"),
        ({"extender": None}, "plan"),
    ],
)
def test_bad_plans_name_the_field(changed: dict[str, object], field: str) -> None:
    base: dict[str, object] = {"extender": ExtenderPlan()}
    with pytest.raises(DeployError) as err:
        render.render(Plan(**{**base, **changed}))  # type: ignore[arg-type]
    assert field in [f for f, _ in err.value.problems]


def test_an_invalid_managed_resource_is_reported_from_kube_schedulers_rules() -> None:
    with pytest.raises(DeployError) as err:
        render.render(Plan(extender=ExtenderPlan(managed_resources=(ManagedResource("cpu"),))))
    ((field, message),) = err.value.problems
    assert field == "extender" and "managedResources[0].name" in message
