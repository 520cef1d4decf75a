"""RBAC is derived from what is enabled, and grants each component only the calls it makes."""

from __future__ import annotations

import dataclasses

import pytest

from kubesched.deploy import extender, render, scheduler, webhook
from kubesched.deploy.plan import WatchPods, WebhookRules, WebhookTLS

from .conftest import NS, all_of, find, plan, rules_of

READ = ("get", "list", "watch")


def grants(
    *entries: tuple[str, str, tuple[str, ...]], names: tuple[str, ...] = ()
) -> list[tuple[str, str, str, tuple[str, ...]]]:
    return sorted((g, r, v, names) for g, r, verbs in entries for v in verbs)


@pytest.mark.parametrize(
    ("bind", "watch", "expected"),
    [
        # auto: the extender watches pods unless every plugin of its policy reads none; it may, so it may read them.
        (False, "auto", grants(("", "nodes", READ), ("", "pods", READ))),
        (False, "yes", grants(("", "nodes", READ), ("", "pods", READ))),
        (False, "no", grants(("", "nodes", READ))),
        (True, "auto", grants(("", "nodes", READ), ("", "pods", READ), ("", "pods/binding", ("create",)))),
        # bind reads the pod when no filter request showed it (no filterVerb, or forgotten).
        (True, "no", grants(("", "nodes", READ), ("", "pods", ("get",)), ("", "pods/binding", ("create",)))),
    ],
)
def test_extender_reads_pods_unless_told_not_to_and_binds_only_with_bind(
    bind: bool, watch: WatchPods, expected: list[tuple[str, str, str, tuple[str, ...]]]
) -> None:
    base = plan("extender", None, bind=bind)
    assert base.extender is not None
    objects = render.render(dataclasses.replace(base, extender=dataclasses.replace(base.extender, watch_pods=watch)))
    assert rules_of(objects, extender.EXTENDER) == expected
    args = find(objects, "Deployment", extender.EXTENDER)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--watch-pods") + 1] == watch
    assert args[args.index("--scheduler-name") + 1] == base.extender.scheduler_name


def test_the_second_kube_scheduler_gets_the_builtin_roles_and_only_its_own_lease() -> None:
    objects = render.render(plan("extender", None))
    granted = rules_of(objects, extender.SCHEDULER)
    builtins = {r for g, r, _, _ in granted if g == "<builtin>"}
    assert builtins == {"system:kube-scheduler", "system:volume-scheduler", "extension-apiserver-authentication-reader"}
    own = [entry for entry in granted if entry[0] != "<builtin>"]
    assert own == grants(("coordination.k8s.io", "leases", ("get", "update")), names=(extender.SCHEDULER,))
    reader = [b for b in all_of(objects, "RoleBinding") if b["roleRef"]["name"].startswith("extension-apiserver")]
    assert [b["metadata"]["namespace"] for b in reader] == ["kube-system"]


def test_the_custom_scheduler_gets_exactly_what_it_calls() -> None:
    granted = rules_of(render.render(plan("scheduler", None)), scheduler.SCHEDULER)
    expected = grants(
        ("", "pods", (*READ, "delete")),
        ("", "pods/binding", ("create",)),
        ("", "pods/status", ("patch",)),
        ("", "nodes", READ),
        ("", "namespaces", READ),
        ("policy", "poddisruptionbudgets", READ),
        ("", "services", READ),
        ("", "replicationcontrollers", READ),
        ("apps", "replicasets", READ),
        ("apps", "statefulsets", READ),
        ("", "persistentvolumes", (*READ, "patch")),
        ("", "persistentvolumeclaims", (*READ, "patch")),
        ("storage.k8s.io", "storageclasses", READ),
        ("storage.k8s.io", "csinodes", READ),
        ("events.k8s.io", "events", ("create", "patch")),
        ("resource.k8s.io", "deviceclasses", READ),
        ("resource.k8s.io", "resourceslices", READ),
        ("resource.k8s.io", "resourceclaims", (*READ, "patch")),  # DynamicResources' PreBind: the finalizer
        ("resource.k8s.io", "resourceclaims/status", ("patch",)),  # allocation and reservedFor
        ("coordination.k8s.io", "leases", ("create",)),
    ) + grants(("coordination.k8s.io", "leases", ("get", "update")), names=(scheduler.SCHEDULER,))
    assert granted == sorted(expected)


def test_a_webhook_without_feasibility_has_no_token_and_no_rbac(tls: WebhookTLS) -> None:
    rules = WebhookRules(config_yaml="rules: []\n", validates=True, can_deny=True, scheduler_scope=("kubesched",))
    objects = render.render(plan("webhook", tls, rules=rules))
    assert rules_of(objects, webhook.WEBHOOK) == []
    assert find(objects, "ServiceAccount", webhook.WEBHOOK)["automountServiceAccountToken"] is False
    pod = find(objects, "Deployment", webhook.WEBHOOK)["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False


def test_a_webhook_with_feasibility_reads_nodes_only(tls: WebhookTLS) -> None:
    objects = render.render(plan("webhook", tls))
    assert rules_of(objects, webhook.WEBHOOK) == grants(("", "nodes", READ))


@pytest.mark.parametrize("mode", ["extender", "scheduler", "webhook", "all"])
def test_no_wildcards_no_secrets_no_escalation(mode: str, tls: WebhookTLS) -> None:
    objects = render.render(plan(mode, tls, bind=True))
    for role in all_of(objects, "ClusterRole") + all_of(objects, "Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
            assert "secrets" not in rule["resources"]
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])
    for b in all_of(objects, "ClusterRoleBinding"):
        assert b["roleRef"]["name"] not in ("cluster-admin", "admin", "edit")
        assert all(s["namespace"] == NS for s in b["subjects"])
