"""The webhook configurations: caBundle, exclusions, failure policies, timeouts, and the certificate checks."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
import yaml
from cryptography import x509

from kubesched import pki
from kubesched.deploy import render, tls, webhook
from kubesched.deploy.plan import DeployError, WebhookRules, WebhookTLS

from .conftest import NS, Obj, all_of, find, make_tls, plan

MUTATE_AND_DENY = WebhookRules(
    config_yaml="rules: []\n", operations=("CREATE", "UPDATE"), mutates=True, validates=True, can_deny=True
)


def configurations(objects: list[Obj]) -> dict[str, Obj]:
    return {o["kind"]: o["webhooks"][0] for o in objects if o["kind"].endswith("WebhookConfiguration")}


def test_ca_bundle_is_the_ca_that_signed_the_serving_certificate(tls: WebhookTLS) -> None:
    objects = render.render(plan("webhook", tls, rules=MUTATE_AND_DENY))
    secret = find(objects, "Secret", webhook.TLS_SECRET)
    assert secret["type"] == "kubernetes.io/tls"
    served = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    for hook in configurations(objects).values():
        ca = x509.load_pem_x509_certificate(base64.b64decode(hook["clientConfig"]["caBundle"]))
        served.verify_directly_issued_by(ca)
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == tls.ca_pem
    sans = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    service = hook["clientConfig"]["service"]
    assert f"{service['name']}.{service['namespace']}.svc" in sans.get_values_for_type(x509.DNSName)


def test_the_service_reaches_the_https_port_the_webhook_listens_on(tls: WebhookTLS) -> None:
    objects = render.render(plan("webhook", tls, rules=MUTATE_AND_DENY))
    service = find(objects, "Service", webhook.WEBHOOK)
    for hook in configurations(objects).values():
        assert hook["clientConfig"]["service"]["port"] == service["spec"]["ports"][0]["port"]
    container = find(objects, "Deployment", webhook.WEBHOOK)["spec"]["template"]["spec"]["containers"][0]
    assert f"0.0.0.0:{container['ports'][0]['containerPort']}" in container["args"]
    assert {h["clientConfig"]["service"]["path"] for h in configurations(objects).values()} == {"/mutate", "/validate"}


def test_safe_defaults_on_every_hook(tls: WebhookTLS) -> None:
    objects = render.render(plan("webhook", tls, rules=MUTATE_AND_DENY, exclude_namespaces=("monitoring",)))
    hooks = configurations(objects)
    assert set(hooks) == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for hook in hooks.values():
        expression = hook["namespaceSelector"]["matchExpressions"][0]
        assert expression == {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", NS, "monitoring"],
        }
        assert hook["sideEffects"] == "None"
        assert hook["timeoutSeconds"] == 5
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["rules"][0]["resources"] == ["pods"] and hook["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert hooks["MutatingWebhookConfiguration"]["failurePolicy"] == "Ignore"
    assert hooks["ValidatingWebhookConfiguration"]["failurePolicy"] == "Ignore"  # the first: unlabelled namespaces
    assert "matchConditions" not in hooks["ValidatingWebhookConfiguration"], "a rule without scope judges every pod"


def test_fail_closed_holds_only_where_namespaces_opt_in(tls: WebhookTLS) -> None:
    """The same rules twice: Fail in namespaces with the label, Ignore in every other one (cert-manager's, a CNI's,
    monitoring): with the webhook down, only the opted-in namespaces stop admitting pods."""
    objects = render.render(plan("webhook", tls, rules=MUTATE_AND_DENY, fail_closed_label=("team.io/strict", "yes")))
    (validating,) = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
    fail_open, fail_closed = validating["webhooks"]
    excluded = {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["kube-system", NS, "cert-manager"],
    }
    assert fail_open["name"] == webhook.VALIDATE_NAME and fail_open["failurePolicy"] == "Ignore"
    assert fail_open["namespaceSelector"]["matchExpressions"] == [
        excluded,
        {"key": "team.io/strict", "operator": "NotIn", "values": ["yes"]},
    ]
    assert fail_closed["name"] == webhook.FAIL_CLOSED_NAME and fail_closed["failurePolicy"] == "Fail"
    assert fail_closed["namespaceSelector"]["matchExpressions"] == [
        excluded,
        {"key": "team.io/strict", "operator": "In", "values": ["yes"]},
    ]
    assert {k: v for k, v in fail_open.items() if k not in ("name", "failurePolicy", "namespaceSelector")} == {
        k: v for k, v in fail_closed.items() if k not in ("name", "failurePolicy", "namespaceSelector")
    }
    pod = find(objects, "Deployment", webhook.WEBHOOK)["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    pdb = find(objects, "PodDisruptionBudget", webhook.WEBHOOK)["spec"]
    assert pdb["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_a_webhook_that_fails_open_registers_one_hook_and_no_priority(tls: WebhookTLS) -> None:
    rules = WebhookRules(config_yaml="", validates=True, can_deny=False)
    objects = render.render(plan("webhook", tls, rules=rules))
    (validating,) = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
    (hook,) = validating["webhooks"]
    assert hook["failurePolicy"] == "Ignore" and len(hook["namespaceSelector"]["matchExpressions"]) == 1
    assert "priorityClassName" not in find(objects, "Deployment", webhook.WEBHOOK)["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    ("label", "message"),
    [(("Not A Key", "x"), "'Not A Key' is not a label key"), (("a.io/b", "no spaces"), "is not a label value")],
)
def test_a_bad_fail_closed_label_names_the_field(tls: WebhookTLS, label: tuple[str, str], message: str) -> None:
    rules = WebhookRules(config_yaml="", validates=True, can_deny=True)
    with pytest.raises(DeployError) as err:
        render.render(plan("webhook", tls, rules=rules, fail_closed_label=label))
    assert [(f, m) for f, m in err.value.problems if message in m and f == "fail_closed_label"], err.value.problems


@pytest.mark.parametrize(
    ("can_deny", "override", "expected"), [(True, None, "Fail"), (False, None, "Ignore"), (True, "Ignore", "Ignore")]
)
def test_validating_failure_policy_follows_the_rules(
    can_deny: bool, override: str | None, expected: str, tls: WebhookTLS
) -> None:
    rules = WebhookRules(config_yaml="", validates=True, can_deny=can_deny)
    objects = render.render(plan("webhook", tls, rules=rules, validating_failure_policy=override))
    assert set(configurations(objects)) == {"ValidatingWebhookConfiguration"}
    (validating,) = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
    assert validating["webhooks"][-1]["failurePolicy"] == expected  # Fail: the opted-in namespaces' hook


def test_only_the_hooks_the_rules_need_are_registered(tls: WebhookTLS) -> None:
    rules = WebhookRules(config_yaml="", mutates=True)
    assert set(configurations(render.render(plan("webhook", tls, rules=rules)))) == {"MutatingWebhookConfiguration"}


def test_scheduler_scoped_rules_only_see_their_schedulers_pods(tls: WebhookTLS) -> None:
    rules = WebhookRules(config_yaml="", validates=True, can_deny=True, scheduler_scope=("kubesched", "other"))
    hook = configurations(render.render(plan("webhook", tls, rules=rules)))["ValidatingWebhookConfiguration"]
    (condition,) = hook["matchConditions"]
    assert condition["expression"] == (
        "has(object.spec.schedulerName) && object.spec.schedulerName in ['kubesched', 'other']"
    )


def test_default_config_warns_only() -> None:
    config = webhook.default_config(["kubesched"])
    assert config["rules"] == [{"name": "can-fit", "feasibility": {"action": "warn", "schedulerNames": ["kubesched"]}}]


def test_the_kustomize_base_takes_the_certificate_from_files() -> None:
    base = render.kustomize_base(plan("webhook", None, rules=MUTATE_AND_DENY))
    resources = {name: text for name, text in base.items() if name.endswith(".yaml") and name != "kustomization.yaml"}
    assert all("kind: Secret" not in text and "caBundle" not in text for text in resources.values())
    kustomization = yaml.safe_load(base["kustomization.yaml"])
    assert kustomization["resources"] == list(resources)
    (generator,) = kustomization["secretGenerator"]
    assert generator["name"] == webhook.TLS_SECRET and generator["type"] == "kubernetes.io/tls"
    (replacement,) = kustomization["replacements"]
    assert replacement["source"]["fieldPath"] == "data.ca\\.crt"
    targets = {t["select"]["kind"]: t["fieldPaths"] for t in replacement["targets"]}
    assert targets == {
        "MutatingWebhookConfiguration": ["webhooks.0.clientConfig.caBundle"],
        "ValidatingWebhookConfiguration": [f"webhooks.{i}.clientConfig.caBundle" for i in (0, 1)],  # fail open/closed
    }
    assert "*\n" in base["certs/.gitignore"]


@pytest.mark.parametrize(
    ("swap", "problem"),
    [("ca", "not signed by ca.crt"), ("key", "not the key of tls.crt"), ("junk", "ca.crt is not a PEM certificate")],
)
def test_a_certificate_that_cannot_serve_is_refused(swap: str, problem: str, tls: WebhookTLS) -> None:
    other = make_tls()
    bad = {
        "ca": WebhookTLS(other.ca_pem, tls.cert_pem, tls.key_pem),
        "key": WebhookTLS(tls.ca_pem, tls.cert_pem, other.key_pem),
        "junk": WebhookTLS(b"junk", tls.cert_pem, tls.key_pem),
    }[swap]
    with pytest.raises(DeployError) as err:
        render.render(plan("webhook", bad))
    assert [f for f, _ in err.value.problems] == ["tls"]
    assert problem in str(err.value)


def test_a_certificate_for_another_service_is_refused() -> None:
    wrong = make_tls(namespace="elsewhere")
    assert tls.problems(wrong, webhook.dns_name(NS)) == [
        f"tls.crt does not name kubesched-webhook.{NS}.svc "
        "(its DNS names: kubesched-webhook.elsewhere.svc, kubesched-webhook.elsewhere)"
    ]


def test_an_expired_certificate_is_refused() -> None:
    ca = pki.new_ca("ca")
    cert = pki.serving_cert(ca, "x", dns_names=[webhook.dns_name(NS)])
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
    (problem,) = tls.problems(WebhookTLS(ca.cert_pem, cert.cert_pem, cert.key_pem), webhook.dns_name(NS), now=later)
    assert problem.startswith("tls.crt expired on")


def test_timeout_must_be_what_the_api_server_accepts(tls: WebhookTLS) -> None:
    with pytest.raises(DeployError) as err:
        render.render(plan("webhook", tls, timeout_seconds=31))
    assert [f for f, _ in err.value.problems] == ["timeout_seconds"]


def test_webhook_pods_are_spread_and_protected(tls: WebhookTLS) -> None:
    objects = render.render(plan("webhook", tls))
    assert find(objects, "Deployment", webhook.WEBHOOK)["spec"]["replicas"] == 2
    (pdb,) = all_of(objects, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
