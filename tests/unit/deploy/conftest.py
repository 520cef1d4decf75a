"""Builders for deploy tests: plans per mode, a certificate for the webhook's Service, lookups in rendered objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kubesched import pki
from kubesched.config.v1 import ManagedResource
from kubesched.deploy import webhook
from kubesched.deploy.plan import ExtenderPlan, Plan, SchedulerPlan, WebhookPlan, WebhookRules, WebhookTLS

Obj = dict[str, Any]
NS = "kubesched"
RESOURCE = ManagedResource("example.com/custom-resource", ignored_by_scheduler=True)
FEASIBILITY_WARN = WebhookRules(
    config_yaml="rules: [{feasibility: {action: warn, schedulerNames: [kubesched]}}]\n",
    validates=True,
    scheduler_scope=("kubesched",),
    needs_nodes=True,
)


def make_tls(namespace: str = NS) -> WebhookTLS:
    ca = pki.new_ca("test webhook CA")
    names = [f"{webhook.WEBHOOK}.{namespace}.svc", f"{webhook.WEBHOOK}.{namespace}"]
    serving = pki.serving_cert(ca, names[0], dns_names=names)
    return WebhookTLS(ca.cert_pem, serving.cert_pem, serving.key_pem)


@pytest.fixture(scope="session")
def tls() -> WebhookTLS:
    return make_tls()


def plan(
    mode: str,
    tls: WebhookTLS | None,
    *,
    bind: bool = False,
    rules: WebhookRules = FEASIBILITY_WARN,
    resources: Sequence[ManagedResource] = (RESOURCE,),
    namespace: str = NS,
    **hook: Any,
) -> Plan:
    """The plan of a mode: extender, scheduler, webhook or all."""
    on = {m: mode in (m, "all") for m in ("extender", "scheduler", "webhook")}
    return Plan(
        namespace=namespace,
        extender=ExtenderPlan(managed_resources=tuple(resources), bind=bind) if on["extender"] else None,
        scheduler=SchedulerPlan() if on["scheduler"] else None,
        webhook=WebhookPlan(rules=rules, tls=tls, **hook) if on["webhook"] else None,
    )


def find(objects: Sequence[Obj], kind: str, name: str | None = None) -> Obj:
    matches = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(matches) == 1, f"{kind} {name}: found {len(matches)}"
    return matches[0]


def all_of(objects: Sequence[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind]


def rules_of(objects: Sequence[Obj], account: str) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(group, resource, verb, resourceNames) granted to a ServiceAccount by the rendered Roles and ClusterRoles."""
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects}
    out = []
    for b in objects:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s["name"] == account for s in b["subjects"]):
            continue
        ref = b["roleRef"]
        namespace = b["metadata"].get("namespace") if ref["kind"] == "Role" else None
        role = roles.get((ref["kind"], namespace, ref["name"]))
        if role is None:  # a built-in role of the API server
            out.append(("<builtin>", ref["name"], "*", ()))
            continue
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.append((group, resource, verb, tuple(rule.get("resourceNames", ()))))
    return sorted(out)
