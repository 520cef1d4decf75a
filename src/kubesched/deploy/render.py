"""A plan to Kubernetes objects, in apply order, and to text: one YAML stream, one file per object, or a kustomize base.

The order is the one `kubectl apply -f` needs: the Namespace first, identities and RBAC before the workloads that
use them, the webhook configurations last (registered only after their Deployment and Service exist).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from kubesched.config.yamlout import KubeDumper, dump_yaml, kube_str
from kubesched.deploy import extender, k8s, scheduler, tls, webhook
from kubesched.deploy.k8s import Obj
from kubesched.deploy.plan import DeployError, Plan

KIND_ORDER = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "Service",
    "Deployment",
    "PodDisruptionBudget",
    "NetworkPolicy",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
# Namespaces we deploy into but never own: no Namespace object (its Pod Security labels would apply to others).
SHARED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
CERTS_DIR = "certs"
EXTENDER_CERTS_DIR = "extender-certs"


def render(plan: Plan) -> list[Obj]:
    """Every object of the plan, in apply order; DeployError lists every problem of the plan."""
    problems = plan.problems()
    if plan.webhook is not None and plan.webhook.tls is not None:
        problems += [("tls", p) for p in tls.problems(plan.webhook.tls, webhook.dns_name(plan.namespace))]
    if plan.extender is not None and plan.extender.tls is not None:
        ext_tls = plan.extender.tls
        found = tls.problems(ext_tls, extender.dns_name(plan.namespace)) + tls.client_problems(ext_tls)
        problems += [("extender.tls", p) for p in found]
    if problems:
        raise DeployError(problems)
    objects: list[Obj] = []
    if plan.namespace not in SHARED_NAMESPACES:
        objects.append(k8s.namespace_object(plan.namespace))
    if plan.extender is not None:
        objects += extender.objects(plan, plan.extender)
    if plan.scheduler is not None:
        objects += scheduler.objects(plan, plan.scheduler)
    if plan.webhook is not None:
        objects += webhook.objects(plan, plan.webhook)
    return sorted(objects, key=lambda o: KIND_ORDER.index(o["kind"]))  # stable: components keep their order


class _Dumper(KubeDumper):
    """Multi-line strings (embedded config files) as literal blocks, readable in the output."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return kube_str(dumper, value)


def _list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    # Lists of plain values (verbs, resources, args) on one line: RBAC reads at a glance.
    flat = all(isinstance(v, (str, int)) and "\n" not in str(v) for v in value) and len(str(value)) < 100
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flat)


_Dumper.add_representer(str, _str)
_Dumper.add_representer(list, _list)


def to_yaml(obj: Any) -> str:
    return dump_yaml(obj, _Dumper, width=120)


def stream(objects: list[Obj]) -> str:
    """One multi-document YAML text."""
    return "".join(f"---\n{to_yaml(o)}" for o in objects)


def file_names(objects: list[Obj]) -> list[str]:
    """`NN-kind-name.yaml`: sorted by name, the files apply in the objects' order."""
    return [f"{i:02d}-{o['kind'].lower()}-{_safe(o['metadata']['name'])}.yaml" for i, o in enumerate(objects)]


def _safe(name: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", name.lower())


def files(objects: list[Obj]) -> dict[str, str]:
    """One file per object."""
    return {name: to_yaml(o) for name, o in zip(file_names(objects), objects, strict=True)}


def kustomize_base(plan: Plan) -> dict[str, str]:
    """A kustomize base: the objects without the webhook's certificate, which a secretGenerator makes from
    `certs/{ca.crt,tls.crt,tls.key}` (`kubesched certs --out certs ...`) and replacements copy into the caBundle."""
    objects = render(plan)
    out = files(objects)
    kustomization: Obj = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(out),
    }
    generated: list[Obj] = []
    kustomization["secretGenerator"] = generated
    if plan.extender is not None and plan.extender.https:
        # The binding extender's certificate and kube-scheduler's client certificate, both from one CA.
        files_of = {
            extender.TLS_SECRET: ("extender", ["ca.crt", "tls.crt", "tls.key"]),
            extender.CLIENT_SECRET: ("extender-scheduler", ["ca.crt", "tls.crt=client.crt", "tls.key=client.key"]),
        }
        for name, (component, keys) in files_of.items():
            paths = [f"{k.partition('=')[0]}={EXTENDER_CERTS_DIR}/{k.rpartition('=')[2]}" for k in keys]
            generated.append(
                {
                    "name": name,
                    "namespace": plan.namespace,
                    "type": "kubernetes.io/tls",
                    "files": paths,
                    "options": {"labels": k8s.labels(component)},
                }
            )
    if plan.webhook is not None:
        generated += [
            {
                "name": webhook.TLS_SECRET,
                "namespace": plan.namespace,
                "type": "kubernetes.io/tls",
                "files": [f"{key}={CERTS_DIR}/{key}" for key in ("ca.crt", "tls.crt", "tls.key")],
                "options": {"labels": k8s.labels("webhook")},
            }
        ]
        targets = [
            {
                "select": {"kind": o["kind"], "name": o["metadata"]["name"]},
                "fieldPaths": [f"webhooks.{i}.clientConfig.caBundle" for i in range(len(o["webhooks"]))],
                "options": {"create": True},
            }
            for o in objects
            if o["kind"].endswith("WebhookConfiguration")
        ]
        # A Secret's data is base64 of the file: exactly what caBundle holds.
        source = {"kind": "Secret", "name": webhook.TLS_SECRET, "fieldPath": "data.ca\\.crt"}
        kustomization["replacements"] = [{"source": source, "targets": targets}]
    if not generated:
        del kustomization["secretGenerator"]
    out["kustomization.yaml"] = to_yaml(kustomization)
    if plan.extender is not None and plan.extender.https:
        command = f"kubesched certs --out {EXTENDER_CERTS_DIR} --service {extender.EXTENDER} --namespace "
        command += f"{plan.namespace} --client {extender.CLIENT_CN}"
        out[f"{EXTENDER_CERTS_DIR}/.gitignore"] = f"# made by: {command}\n*\n!.gitignore\n"
    if plan.webhook is not None:
        # The serving key is made where it is used and never committed.
        command = f"kubesched certs --out {CERTS_DIR} --service {webhook.WEBHOOK} --namespace {plan.namespace}"
        out[f"{CERTS_DIR}/.gitignore"] = f"# made by: {command}\n*\n!.gitignore\n"
    return out
