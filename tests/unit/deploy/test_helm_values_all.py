"""The chart with every value set (every-value.yaml): it lints, renders, and each tunable reaches the pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.deploy import helm_values
from tests.unit.deploy.helm_support import CHART, PROMETHEUS_OPERATOR, helm_binary, run_helm, template

Obj = dict[str, Any]
EVERY_VALUE = Path(__file__).parent / "every-value.yaml"
POD_KEYS = ("nodeSelector", "tolerations", "affinity", "priorityClassName")


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


@pytest.fixture(scope="module")
def rendered(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Obj]:
    values = yaml.safe_load(EVERY_VALUE.read_text())
    objects = template(helm, values, tmp_path_factory.mktemp("all"), "platform", api_versions=PROMETHEUS_OPERATOR)
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def _keys(values: object, prefix: str = "") -> set[str]:
    if not isinstance(values, dict) or not values:
        return set()
    out = set()
    for key, value in values.items():
        out.add(f"{prefix}{key}")
        out |= _keys(value, f"{prefix}{key}.")
    return out


def test_the_file_sets_every_value_of_the_chart() -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    missing = _keys(defaults) - _keys(yaml.safe_load(EVERY_VALUE.read_text()))
    assert not missing, f"add to {EVERY_VALUE.name}: {sorted(missing)}"


def test_it_lints_strictly(helm: Path) -> None:
    assert "0 chart(s) failed" in run_helm(helm, "lint", str(CHART), "--strict", "-f", str(EVERY_VALUE)).stdout


def test_every_pod_tunable_reaches_its_deployment(rendered: dict[tuple[str, str], Obj]) -> None:
    values = yaml.safe_load(EVERY_VALUE.read_text())
    image = f"{values['image']['repository']}@{values['image']['digest']}"
    pods = {
        "kubesched-scheduler": (values["scheduler"], values["scheduler"]["resources"], 2, image),
        "kubesched-extender": (values["extender"], values["extender"]["resources"], 1, image),
        "kubesched-extender-scheduler": (
            values["extender"],
            values["extender"]["kubeScheduler"]["resources"],
            2,
            values["extender"]["kubeSchedulerImage"],
        ),
        "kubesched-webhook": (values["webhook"], values["webhook"]["resources"], 3, image),
    }
    for name, (tunables, resources, replicas, want_image) in pods.items():
        deployment = rendered[("Deployment", name)]
        spec = deployment["spec"]
        pod = spec["template"]["spec"]
        assert spec["replicas"] == replicas, name
        for key in POD_KEYS:
            if tunables[key]:
                assert pod[key] == tunables[key], (name, key)
            else:
                assert key not in pod, (name, key)
        assert pod["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}]
        (container,) = pod["containers"]
        assert container["image"] == want_image and container["imagePullPolicy"] == "Always"
        assert container["resources"] == resources, name
        meta = spec["template"]["metadata"]
        assert meta["labels"]["team"] == "platform"
        assert meta["labels"].items() >= spec["selector"]["matchLabels"].items()
        assert meta["annotations"]["example.com/owner"] == "platform"
        for constraint in pod["topologySpreadConstraints"]:  # filled in: each component counts its own pods
            assert constraint["labelSelector"] == {"matchLabels": spec["selector"]["matchLabels"]}, name
        if replicas >= 2:
            pdb = rendered[("PodDisruptionBudget", name)]["spec"]
            assert pdb["selector"] == spec["selector"] and pdb["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        else:
            assert ("PodDisruptionBudget", name) not in rendered


def test_two_replicas_elect_a_leader(rendered: dict[tuple[str, str], Obj]) -> None:
    """replicaCount 2: both schedulers run leader election on the Lease their Role grants, durations as given."""
    config = yaml.safe_load(rendered[("ConfigMap", "kubesched-scheduler")]["data"]["config.yaml"])
    assert config["leaderElection"] == {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceName": "kubesched-scheduler",
        "resourceNamespace": "platform",
    }
    role = rendered[("Role", "kubesched-scheduler")]["rules"]
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]} in role
    ks = yaml.safe_load(rendered[("ConfigMap", "kubesched-extender-scheduler")]["data"]["config.yaml"])
    election = ks["leaderElection"]
    assert election["leaderElect"] is True and election["resourceName"] == "kubesched-extender-scheduler"
    assert election["resourceNamespace"] == "platform"


def test_the_webhook_fails_closed_only_under_the_given_label(rendered: dict[tuple[str, str], Obj]) -> None:
    fail_open, fail_closed = rendered[("ValidatingWebhookConfiguration", "kubesched-webhook.platform")]["webhooks"]
    names = {"key": "kubernetes.io/metadata.name", "operator": "NotIn"}
    assert fail_open["namespaceSelector"]["matchExpressions"] == [
        {**names, "values": ["kube-system", "platform", "cert-manager", "calico-system"]},
        {"key": "platform.example.com/admission", "operator": "NotIn", "values": ["strict"]},
    ]
    assert fail_closed["namespaceSelector"]["matchExpressions"][1]["operator"] == "In"
    assert (fail_open["failurePolicy"], fail_closed["failurePolicy"]) == ("Ignore", "Fail")
    monitor = rendered[("ServiceMonitor", "kubesched-webhook")]["spec"]["endpoints"][0]
    assert monitor["tlsConfig"]["ca"] == {"configMap": {"name": "kubesched-webhook-ca", "key": "ca.crt"}}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"image": "kubesched:0.1.0"}, "at '/image': got string, want object"),
        ({"image": {"repository": "k", "pullPolicy": "Sometimes"}}, "at '/image/pullPolicy'"),
        ({"scheduler": {"enabled": True, "replicaCount": 0}}, "at '/scheduler/replicaCount'"),
        ({"webhook": {"enabled": True, "replicaCount": "2"}}, "at '/webhook/replicaCount'"),
        ({"extender": {"enabled": True, "replicaCount": 2}}, "additional properties 'replicaCount' not allowed"),
        ({"scheduler": {"enabled": True, "resources": {"request": {}}}}, "additional properties 'request'"),
        ({"webhook": {"enabled": True, "failClosedNamespaceLabel": {"key": "a b", "value": "x"}}}, "failClosed"),
        ({"imagePullSecrets": [{"name": "x"}]}, "at '/imagePullSecrets/0'"),
        ({"metrics": {"serviceMonitor": {"webhookCA": {"file": "x"}}}}, "additional properties 'file'"),
    ],
)
def test_bad_tunables_fail_with_the_field(helm: Path, tmp_path: Path, values: Obj, message: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    proc = run_helm(helm, "template", "x", str(CHART), "-f", str(path), check=False)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("reference", "values"),
    [
        ("kubesched:0.1.0", {"repository": "kubesched", "tag": "0.1.0"}),
        ("kubesched", {"repository": "kubesched", "tag": "latest"}),
        ("reg.example:5000/team/ks", {"repository": "reg.example:5000/team/ks", "tag": "latest"}),
        ("reg.example:5000/ks:2", {"repository": "reg.example:5000/ks", "tag": "2"}),
        ("ks:1@sha256:" + "0" * 64, {"repository": "ks", "tag": "1", "digest": "sha256:" + "0" * 64}),
        ("r.io/ks@sha256:" + "0" * 64, {"repository": "r.io/ks", "tag": "", "digest": "sha256:" + "0" * 64}),
    ],
)
def test_an_image_reference_as_the_charts_image_values(reference: str, values: Obj) -> None:
    assert helm_values.image(reference) == values
