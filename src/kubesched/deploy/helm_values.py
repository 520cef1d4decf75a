"""A plan as values of the Helm chart `deploy/helm/kubesched`: `kubesched manifests MODE ... --helm-values`.

The chart renders the same objects from these values as `render` does from the plan (tests/unit/deploy/
test_helm_chart.py checks it), so whatever the CLI read and checked (the policy's managedResources, the scheduler
config, plugin and rule files, certificates) reaches a Helm release unchanged.
"""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.deploy import extender, scheduler
from kubesched.deploy.plan import Plan

Values = dict[str, Any]


def values(plan: Plan, *, generate_certs: bool = False, cert_days: int = 365) -> Values:
    """The chart's values for `plan`. With `generate_certs` the chart makes the certificate (nothing secret is
    written); else the plan's certificate and key are given as PEM (`certificates.mode: provided`)."""
    out: Values = {"image": image(plan.image)}
    if plan.scheduler is not None:
        sched = plan.scheduler
        out["scheduler"] = {
            "enabled": True,
            "schedulerName": sched.scheduler_name,
            "config": _relative(dict(sched.config)) if sched.config is not None else {},
            "pluginFiles": dict(sched.plugin_files),
        }
    if plan.extender is not None:
        ext = plan.extender
        managed = [{"name": r.name, "ignoredByScheduler": r.ignored_by_scheduler} for r in ext.managed_resources]
        out["extender"] = {
            "enabled": True,
            "policy": ext.policy.removeprefix(f"{extender.POLICY_DIR}/"),
            "policyFiles": dict(ext.policy_files),
            "managedResources": managed,
            "watchPods": ext.watch_pods,
            "bind": ext.bind,
            "schedulerName": ext.scheduler_name,
            "kubeSchedulerImage": ext.kube_scheduler_image,
        }
        if ext.bind:
            ext_certs: Values = {"mode": "generate", "days": cert_days}
            if not generate_certs and ext.tls is not None:
                t = ext.tls
                pems = {"ca": t.ca_pem, "cert": t.cert_pem, "key": t.key_pem}
                pems |= {"clientCert": t.client_cert_pem, "clientKey": t.client_key_pem}
                ext_certs = {"mode": "provided", **{k: v.decode("ascii") for k, v in pems.items()}}
            out["extender"]["certificates"] = ext_certs
    if plan.webhook is not None:
        hook = plan.webhook
        certificates: Values = {"mode": "generate", "days": cert_days}
        if not generate_certs and hook.tls is not None:
            tls = hook.tls
            pems = {"ca": tls.ca_pem, "cert": tls.cert_pem, "key": tls.key_pem}
            certificates = {"mode": "provided", **{k: v.decode("ascii") for k, v in pems.items()}}
        out["webhook"] = {
            "enabled": True,
            "config": yaml.safe_load(hook.rules.config_yaml),
            "files": dict(hook.rules.files),
            "excludeNamespaces": list(hook.exclude_namespaces),
            "failClosedNamespaceLabel": dict(zip(("key", "value"), hook.fail_closed_label, strict=True)),
            "validatingFailurePolicy": hook.validating_failure_policy or "",
            "timeoutSeconds": hook.timeout_seconds,
            "managedResources": list(hook.managed_resources),
            "certificates": certificates,
        }
    return out


def image(reference: str) -> Values:
    """`REPO[:TAG][@DIGEST]` as the chart's image.repository, .tag and .digest (a bare name is Docker's :latest)."""
    name, _, digest = reference.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    repository, tag = (name[:colon], name[colon + 1 :]) if colon > slash else (name, "" if digest else "latest")
    out: Values = {"repository": repository, "tag": tag}
    if digest:
        out["digest"] = digest
    return out


def _relative(config: Values) -> Values:
    """pluginModules as the user wrote them for the chart (`NAME.py:Class` of pluginFiles), not the mounted paths."""
    modules = config.get("pluginModules")
    if isinstance(modules, list):
        config["pluginModules"] = [str(m).removeprefix(f"{scheduler.PLUGINS_DIR}/") for m in modules]
    return config
