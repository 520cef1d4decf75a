"""Builders for the Kubernetes objects the renderer emits: plain dicts, in the key order kubectl prints.

Every workload gets the same hardening: non-root (uid 65532), read-only root file system, no privilege escalation,
all capabilities dropped, the runtime's default seccomp profile; so the pods pass the `restricted` Pod Security
Standard that our namespace enforces.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Obj = dict[str, Any]

PART_OF = "kubesched"
MANAGED_BY = "kubesched-manifests"
RUN_AS = 65532  # "nonroot" of distroless images; our Dockerfile creates the same uid
# The priority of every pod we run but a fail-open webhook: losing one stops scheduling (a secondary scheduler is
# evicted before the pods it would place otherwise) or pod creation (a fail-closed webhook).
CRITICAL_PRIORITY = "system-cluster-critical"


def selector(component: str) -> dict[str, str]:
    """The labels a Service and a Deployment select a component's pods by (never changed after the first apply)."""
    return {"app.kubernetes.io/name": PART_OF, "app.kubernetes.io/component": component}


def labels(component: str) -> dict[str, str]:
    return {**selector(component), "app.kubernetes.io/part-of": PART_OF, "app.kubernetes.io/managed-by": MANAGED_BY}


def global_name(name: str, namespace: str) -> str:
    """The name of a cluster-scoped object (or one in kube-system): two installations never share one."""
    return f"{name}.{namespace}"


def new(api_version: str, kind: str, name: str, component: str, namespace: str | None = None, **body: Any) -> Obj:
    """An object with metadata (namespaced when `namespace` is given) and the top-level fields in `body`."""
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels(component)
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}


def service_account(name: str, namespace: str, component: str, *, token: bool) -> Obj:
    # No token unless the component calls the API server: a stolen token that does not exist grants nothing.
    return new("v1", "ServiceAccount", name, component, namespace, automountServiceAccountToken=token)


def config_map(name: str, namespace: str, component: str, data: Mapping[str, str]) -> Obj:
    return new("v1", "ConfigMap", name, component, namespace, data=dict(sorted(data.items())))


def tls_secret(name: str, namespace: str, component: str, ca: bytes, cert: bytes, key: bytes) -> Obj:
    data = {"ca.crt": _b64(ca), "tls.crt": _b64(cert), "tls.key": _b64(key)}
    return new("v1", "Secret", name, component, namespace, type="kubernetes.io/tls", data=data)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def service(name: str, namespace: str, component: str, port: int, target: str) -> Obj:
    ports = [{"name": target, "port": port, "targetPort": target, "protocol": "TCP"}]
    return new("v1", "Service", name, component, namespace, spec={"selector": selector(component), "ports": ports})


# --- RBAC ----------------------------------------------------------------------------------------------------


def rule(group: str, resources: Sequence[str], verbs: Sequence[str], names: Sequence[str] = ()) -> Obj:
    out: Obj = {"apiGroups": [group], "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    out["verbs"] = list(verbs)
    return out


def cluster_role(name: str, component: str, rules: Sequence[Obj]) -> Obj:
    return new("rbac.authorization.k8s.io/v1", "ClusterRole", name, component, rules=list(rules))


def role(name: str, namespace: str, component: str, rules: Sequence[Obj]) -> Obj:
    return new("rbac.authorization.k8s.io/v1", "Role", name, component, namespace, rules=list(rules))


def binding(
    name: str,
    component: str,
    role_ref: tuple[Literal["ClusterRole", "Role"], str],
    account: tuple[str, str],
    namespace: str | None = None,
) -> Obj:
    """A ClusterRoleBinding (namespace None) or RoleBinding of `role_ref` (kind, name) to ServiceAccount (ns, name)."""
    kind = "ClusterRoleBinding" if namespace is None else "RoleBinding"
    subject = {"kind": "ServiceAccount", "name": account[1], "namespace": account[0]}
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": role_ref[0], "name": role_ref[1]}
    return new("rbac.authorization.k8s.io/v1", kind, name, component, namespace, roleRef=ref, subjects=[subject])


# --- workloads -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Volume:
    """A volume and where the container mounts it (read-only unless it is scratch space)."""

    name: str
    source: Obj
    mount_path: str
    read_only: bool = True


def config_volume(name: str, config_map_name: str, mount_path: str) -> Volume:
    # Mounted as a directory (no subPath) so that edits of the ConfigMap reach the running pod.
    return Volume(name, {"configMap": {"name": config_map_name}}, mount_path)


def secret_volume(name: str, secret_name: str, mount_path: str) -> Volume:
    # 0440 + the pod's fsGroup: readable by our uid, by no one else.
    return Volume(name, {"secret": {"secretName": secret_name, "defaultMode": 0o440}}, mount_path)


TMP = Volume("tmp", {"emptyDir": {"sizeLimit": "64Mi"}}, "/tmp", read_only=False)


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    args: Sequence[str]
    port_name: str
    port: int
    scheme: Literal["HTTP", "HTTPS"]
    health: str = "/healthz"
    ready: str = "/readyz"
    cpu: str = "100m"
    memory: str = "128Mi"
    memory_limit: str = "512Mi"
    volumes: Sequence[Volume] = field(default_factory=tuple)
    command: Sequence[str] = ()
    pull_policy: str = "IfNotPresent"

    def render(self) -> Obj:
        out: Obj = {"name": self.name, "image": self.image, "imagePullPolicy": self.pull_policy}
        if self.command:
            out["command"] = list(self.command)
        out["args"] = list(self.args)
        out["ports"] = [{"name": self.port_name, "containerPort": self.port, "protocol": "TCP"}]
        # No CPU limit: throttling a scheduler or a webhook only turns into timeouts; memory is capped.
        out["resources"] = {
            "requests": {"cpu": self.cpu, "memory": self.memory},
            "limits": {"memory": self.memory_limit},
        }
        out["livenessProbe"] = _probe(self.health, self.port_name, self.scheme, period=20, failures=3)
        out["readinessProbe"] = _probe(self.ready, self.port_name, self.scheme, period=5, failures=2)
        out["securityContext"] = {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        }
        mounts = [{"name": v.name, "mountPath": v.mount_path, "readOnly": v.read_only} for v in self.volumes]
        if mounts:
            out["volumeMounts"] = mounts
        return out


def _probe(path: str, port: str, scheme: str, *, period: int, failures: int) -> Obj:
    return {
        "httpGet": {"path": path, "port": port, "scheme": scheme},
        "initialDelaySeconds": 5,
        "periodSeconds": period,
        "timeoutSeconds": 3,
        "failureThreshold": failures,
    }


def deployment(
    name: str,
    namespace: str,
    component: str,
    container: Container,
    *,
    service_account: str,
    token: bool,
    replicas: int = 1,
    inputs: Sequence[Obj] = (),
    priority_class: str | None = CRITICAL_PRIORITY,
    spread: bool = False,
) -> Obj:
    """One container's Deployment; `inputs` (its ConfigMaps, Secret) are hashed into an annotation, so that
    applying a changed config rolls the pods of programs that read it only at start. `spread`: replicas on
    different nodes where there are several (a preference: one node still runs them all)."""
    pod_spec: Obj = {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": token,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "fsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container.render()],
    }
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    if spread:
        pod_spec["topologySpreadConstraints"] = [spread_constraint(component)]
    volumes = [{"name": v.name, **v.source} for v in container.volumes]
    if volumes:
        pod_spec["volumes"] = volumes
    template_meta: Obj = {"labels": labels(component)}
    if inputs:
        template_meta["annotations"] = {"kubesched.io/inputs-sha256": _digest(inputs)}
    template = {"metadata": template_meta, "spec": pod_spec}
    spec = {"replicas": replicas, "selector": {"matchLabels": selector(component)}, "template": template}
    return new("apps/v1", "Deployment", name, component, namespace, spec=spec)


def spread_constraint(component: str) -> Obj:
    # pod-template-hash: during a rollout the old ReplicaSet's pods do not count against the new one's.
    return {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": selector(component)},
        "matchLabelKeys": ["pod-template-hash"],
    }


def pod_disruption_budget(name: str, namespace: str, component: str) -> Obj:
    # AlwaysAllow: a crash-looping pod (not Ready) never blocks a node drain; it protects nothing.
    spec = {
        "minAvailable": 1,
        "selector": {"matchLabels": selector(component)},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }
    return new("policy/v1", "PodDisruptionBudget", name, component, namespace, spec=spec)


def _digest(objects: Sequence[Obj]) -> str:
    text = json.dumps([o.get("data") for o in objects], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def namespace_object(name: str) -> Obj:
    # The restricted Pod Security Standard: every pod we render complies, and nothing weaker can land beside them.
    pss = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
    out = new("v1", "Namespace", name, "namespace")
    out["metadata"]["labels"].update(pss)
    return out
