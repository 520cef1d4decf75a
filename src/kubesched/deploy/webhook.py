"""The admission webhook: its Deployment and Service, TLS Secret, and the webhook configurations with the caBundle.

Safety first: the namespaces in `Plan.excluded_namespaces()` (kube-system, ours, cert-manager's, the user's) are
never sent to the webhook; each hook's failurePolicy is explicit (mutating: Ignore, validating: Fail only when a rule
can deny), and Fail holds only in namespaces that opt in with a label: the same rules run elsewhere too, but there
they fail open; timeoutSeconds is set; a validating webhook whose rules all concern some schedulers is only called
for their pods.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Sequence

from kubesched.deploy import k8s
from kubesched.deploy.k8s import Obj
from kubesched.deploy.plan import Plan, WebhookPlan

WEBHOOK = "kubesched-webhook"
TLS_SECRET = f"{WEBHOOK}-tls"
CONFIG_MAP = f"{WEBHOOK}-config"
PORT = 8443
SERVICE_PORT = 443
CONFIG_DIR = "/etc/kubesched/webhook"
TLS_DIR = "/etc/kubesched/tls"
MUTATE_NAME = "mutate.kubesched.io"
VALIDATE_NAME = "validate.kubesched.io"
FAIL_CLOSED_NAME = "validate-fail-closed.kubesched.io"  # the same rules, failurePolicy Fail, opted-in namespaces
ADMISSION = "admissionregistration.k8s.io/v1"


def dns_name(namespace: str) -> str:
    """The name the API server calls the webhook's Service by, which its certificate must carry."""
    return f"{WEBHOOK}.{namespace}.svc"


def default_config(scheduler_names: Sequence[str]) -> dict[str, object]:
    """The rules when none are given: warn (never deny) when a pod of our schedulers can never fit."""
    feasibility = {"action": "warn", "schedulerNames": list(scheduler_names)}
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "WebhookConfig",
        "operations": ["CREATE"],
        "rules": [{"name": "can-fit", "feasibility": feasibility}],
    }


def objects(plan: Plan, hook: WebhookPlan) -> list[Obj]:
    ns, component, rules = plan.namespace, "webhook", hook.rules
    out = [k8s.service_account(WEBHOOK, ns, component, token=hook.uses_api)]
    if hook.uses_api:  # without feasibility rules or managed resources the webhook never calls the API
        cluster_name = k8s.global_name(WEBHOOK, ns)
        rbac = [k8s.rule("", ["nodes"], ["get", "list", "watch"])]
        if hook.managed_resources:  # requests are counted from the pods; least privilege: only then
            rbac.append(k8s.rule("", ["pods"], ["get", "list", "watch"]))
        out.append(k8s.cluster_role(cluster_name, component, rbac))
        out.append(k8s.binding(cluster_name, component, ("ClusterRole", cluster_name), (ns, WEBHOOK)))
    config = k8s.config_map(CONFIG_MAP, ns, component, {"config.yaml": rules.config_yaml, **rules.files})
    out.append(config)
    inputs = [config]
    if hook.tls is not None:
        tls = hook.tls
        secret = k8s.tls_secret(TLS_SECRET, ns, component, tls.ca_pem, tls.cert_pem, tls.key_pem)
        out.append(secret)
        inputs.append(secret)
    args = ["webhook", "serve", "--config", f"{CONFIG_DIR}/config.yaml"]
    args += ["--tls-cert", f"{TLS_DIR}/tls.crt", "--tls-key", f"{TLS_DIR}/tls.key"]
    args += ["--listen", f"0.0.0.0:{PORT}", "--log-format", "json"]
    args += ["--plugins-from", "files" if rules.files else "image"]  # docs/security.md
    for name in hook.managed_resources:
        args += ["--managed-resource", name]
    volumes = [
        k8s.config_volume("config", CONFIG_MAP, CONFIG_DIR),
        k8s.secret_volume("tls", TLS_SECRET, TLS_DIR),
        k8s.TMP,
    ]
    container = k8s.Container(
        "webhook", plan.image, args, "https", PORT, "HTTPS", cpu="50m", memory="96Mi", volumes=volumes
    )
    # Two replicas on two nodes and a PodDisruptionBudget: with failurePolicy Fail, a lone pod being drained (or its
    # node lost) blocks pods in the opted-in namespaces.
    out.append(
        k8s.deployment(
            WEBHOOK,
            ns,
            component,
            container,
            service_account=WEBHOOK,
            token=hook.uses_api,
            replicas=2,
            inputs=inputs,
            priority_class=priority_class(hook),
            spread=True,
        )
    )
    out.append(k8s.service(WEBHOOK, ns, component, SERVICE_PORT, "https"))
    out.append(k8s.pod_disruption_budget(WEBHOOK, ns, component))
    ca_bundle = base64.b64encode(hook.tls.ca_pem).decode("ascii") if hook.tls else None
    if rules.mutates:
        out.append(_configuration(plan, hook, "Mutating", ca_bundle))
    if rules.validates:
        out.append(_configuration(plan, hook, "Validating", ca_bundle))
    return out


def priority_class(hook: WebhookPlan) -> str | None:
    """A fail-closed webhook is as critical as the pods it admits; one that fails open is not."""
    return k8s.CRITICAL_PRIORITY if hook.rules.validates and hook.failure_policy == "Fail" else None


def _configuration(plan: Plan, hook: WebhookPlan, kind: str, ca_bundle: str | None) -> Obj:
    mutating = kind == "Mutating"
    client: Obj = {
        "service": {
            "namespace": plan.namespace,
            "name": WEBHOOK,
            "path": "/mutate" if mutating else "/validate",
            "port": SERVICE_PORT,
        }
    }
    if ca_bundle is not None:
        client["caBundle"] = ca_bundle
    pods = {
        "operations": list(hook.rules.operations),
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["pods"],  # not pods/*: status updates and bindings are never judged
        "scope": "Namespaced",
    }
    excluded = {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": plan.excluded_namespaces()}
    webhook: Obj = {
        "name": MUTATE_NAME if mutating else VALIDATE_NAME,
        "clientConfig": client,
        "rules": [pods],
        "namespaceSelector": {"matchExpressions": [excluded]},
        # Mutating only routes pods (schedulerName, tolerations, labels): when the webhook is down, a pod admitted
        # unchanged goes to the default scheduler, visibly; blocking every pod would be worse.
        "failurePolicy": "Ignore" if mutating else hook.failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": hook.timeout_seconds,
        "admissionReviewVersions": ["v1"],
    }
    scope = hook.rules.scheduler_scope
    if not mutating and scope is not None:
        webhook["matchConditions"] = [{"name": "kubesched-schedulers", "expression": scheduler_expression(scope)}]
    if mutating:
        webhook["reinvocationPolicy"] = "Never"
    webhooks = [webhook]
    if not mutating and hook.failure_policy == "Fail":
        webhooks = _fail_closed_where_opted_in(webhook, hook.fail_closed_label)
    name = k8s.global_name(WEBHOOK, plan.namespace)
    return k8s.new(ADMISSION, f"{kind}WebhookConfiguration", name, "webhook", webhooks=webhooks)


def _fail_closed_where_opted_in(webhook: Obj, label: tuple[str, str]) -> list[Obj]:
    """Two hooks of the same rules: Fail in namespaces labelled `label`, Ignore in every other one. Whatever runs
    in an unlabelled namespace (cert-manager, a CNI, ingress, monitoring) can start while the webhook is down."""
    key, value = label
    fail_open = copy.deepcopy(webhook)
    fail_open["namespaceSelector"]["matchExpressions"].append({"key": key, "operator": "NotIn", "values": [value]})
    fail_open["failurePolicy"] = "Ignore"
    fail_closed = copy.deepcopy(webhook)
    fail_closed["name"] = FAIL_CLOSED_NAME
    fail_closed["namespaceSelector"]["matchExpressions"].append({"key": key, "operator": "In", "values": [value]})
    return [fail_open, fail_closed]


def scheduler_expression(names: Sequence[str]) -> str:
    """CEL: the pod asks for one of `names`. The API server defaults schedulerName before admission; `has` only
    keeps a missing field from being an evaluation error (which failurePolicy Fail would turn into a denial)."""
    quoted = ", ".join("'" + n.replace("\\", "\\\\").replace("'", "\\'") + "'" for n in sorted(set(names)))
    return f"has(object.spec.schedulerName) && object.spec.schedulerName in [{quoted}]"
