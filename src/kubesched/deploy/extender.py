"""Extender mode: `kubesched extender serve` behind a second kube-scheduler that calls it.

The second kube-scheduler is the stock image with its own schedulerName and its own Lease, so it never competes
with the cluster's default scheduler; its KubeSchedulerConfiguration is made by `kubesched.config`.
"""

from __future__ import annotations

from typing import Literal

from kubesched.config.duration import Duration
from kubesched.config.render import dump, render_config, unreserved_note
from kubesched.config.v1 import Extender, LeaderElectionV1, ProfileV1, SchedulerConfigV1, TLSConfig
from kubesched.config.validation import validate
from kubesched.deploy import k8s
from kubesched.deploy.k8s import Obj
from kubesched.deploy.plan import DeployError, ExtenderPlan, Plan

EXTENDER = "kubesched-extender"
SCHEDULER = "kubesched-extender-scheduler"  # Deployment, ServiceAccount, ConfigMap and Lease
PORT = 8888
POLICY_DIR = "/etc/kubesched/policy"
CONFIG_DIR = "/etc/kubernetes/kube-scheduler"
KUBE_SCHEDULER_PORT = 10259  # kube-scheduler's secure port (HTTPS, self-signed)
# With --bind: the extender's serving certificate (and the CA its clients' certificates are checked with), and
# kube-scheduler's client certificate (with the CA it checks the extender's certificate with).
TLS_SECRET = f"{EXTENDER}-tls"
CLIENT_SECRET = f"{SCHEDULER}-client-tls"
TLS_DIR = "/etc/kubesched/tls"
CLIENT_DIR = "/etc/kubernetes/extender-tls"
CLIENT_CN = "kube-scheduler"  # the client certificate's subject, as the extender's log shows it


def url(namespace: str, https: bool = False) -> str:
    """Where kube-scheduler reaches the extender: its Service; HTTPS with a client certificate when it binds."""
    return f"{'https' if https else 'http'}://{EXTENDER}.{namespace}.svc:{PORT}"


def dns_name(namespace: str) -> str:
    """The name kube-scheduler checks the extender's serving certificate for."""
    return f"{EXTENDER}.{namespace}.svc"


def scheduler_config(plan: Plan, ext: ExtenderPlan) -> SchedulerConfigV1:
    """The second kube-scheduler's configuration: one profile, our extender, a Lease of its own in our namespace."""
    tls = None
    if ext.https:
        files = {f: f"{CLIENT_DIR}/{f}" for f in ("tls.crt", "tls.key", "ca.crt")}
        tls = TLSConfig(cert_file=files["tls.crt"], key_file=files["tls.key"], ca_file=files["ca.crt"])
    extender = Extender(
        url_prefix=url(plan.namespace, ext.https),
        enable_https=ext.https,
        tls_config=tls,
        filter_verb="filter",
        prioritize_verb="prioritize",
        preempt_verb="preempt",
        bind_verb="bind" if ext.bind else "",
        weight=1,
        http_timeout=Duration.of(seconds=5),
        node_cache_capable=True,  # the extender list+watches nodes itself
        managed_resources=ext.managed_resources,
    )
    lease = LeaderElectionV1(leader_elect=True, resource_name=SCHEDULER, resource_namespace=plan.namespace)
    return SchedulerConfigV1(extenders=(extender,), profiles=(ProfileV1(ext.scheduler_name),), leader_election=lease)


def objects(plan: Plan, ext: ExtenderPlan) -> list[Obj]:
    config = scheduler_config(plan, ext)
    errors = validate(config)
    if errors:
        raise DeployError([("extender", f"scheduler config {e}") for e in errors])
    text = unreserved_note(config.extenders) + dump(render_config(config))
    return _extender(plan, ext) + _kube_scheduler(plan, ext, text)


def _extender(plan: Plan, ext: ExtenderPlan) -> list[Obj]:
    ns, component = plan.namespace, "extender"
    rules = [k8s.rule("", ["nodes"], ["get", "list", "watch"])]
    if ext.may_watch_pods:
        rules.append(k8s.rule("", ["pods"], ["get", "list", "watch"]))
    elif ext.bind:
        rules.append(k8s.rule("", ["pods"], ["get"]))  # bind reads a pod no filter request showed it
    if ext.bind:
        rules.append(k8s.rule("", ["pods/binding"], ["create"]))
    cluster_name = k8s.global_name(EXTENDER, ns)
    out = [
        k8s.service_account(EXTENDER, ns, component, token=True),
        k8s.cluster_role(cluster_name, component, rules),
        k8s.binding(cluster_name, component, ("ClusterRole", cluster_name), (ns, EXTENDER)),
    ]
    args = [
        "extender",
        "serve",
        "--policy",
        ext.policy,
        "--in-cluster",
        "--watch-pods",
        ext.watch_pods,
        "--scheduler-name",
        ext.scheduler_name,
    ]
    args += ["--listen", f"0.0.0.0:{PORT}", "--log-format", "json"]
    args += ["--plugins-from", "files" if ext.policy_files else "image"]  # docs/security.md
    volumes = [k8s.TMP]
    inputs: list[Obj] = []
    if ext.policy_files:
        policy = k8s.config_map(f"{EXTENDER}-policy", ns, component, ext.policy_files)
        out.append(policy)
        inputs.append(policy)
        volumes.append(k8s.config_volume("policy", f"{EXTENDER}-policy", POLICY_DIR))
    if ext.https:
        # Verbs only for clients with a certificate the CA signed (kube-scheduler's); the probes need none.
        args += ["--tls-cert", f"{TLS_DIR}/tls.crt", "--tls-key", f"{TLS_DIR}/tls.key"]
        args += ["--client-ca", f"{TLS_DIR}/ca.crt"]
        if ext.tls is not None:
            tls = ext.tls
            out.append(k8s.tls_secret(TLS_SECRET, ns, component, tls.ca_pem, tls.cert_pem, tls.key_pem))
        # The whole Secret, no subPath: kubelet updates the files, which the extender reloads.
        volumes.append(k8s.secret_volume("tls", TLS_SECRET, TLS_DIR))
    port_name = "https" if ext.https else "http"
    scheme: Literal["HTTP", "HTTPS"] = "HTTPS" if ext.https else "HTTP"
    container = k8s.Container("extender", plan.image, args, port_name, PORT, scheme, volumes=volumes)
    out.append(k8s.deployment(EXTENDER, ns, component, container, service_account=EXTENDER, token=True, inputs=inputs))
    out.append(k8s.service(EXTENDER, ns, component, PORT, port_name))
    out.append(_network_policy(ns, port_name))
    return out


def _network_policy(namespace: str, port: str) -> Obj:
    # Anyone who can reach /bind binds pods with the extender's rights: only our kube-scheduler may call it.
    # Kubelet probes come from the node, which NetworkPolicy does not restrict.
    source = {"podSelector": {"matchLabels": k8s.selector("extender-scheduler")}}
    spec = {
        "podSelector": {"matchLabels": k8s.selector("extender")},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [source], "ports": [{"protocol": "TCP", "port": port}]}],
    }
    return k8s.new("networking.k8s.io/v1", "NetworkPolicy", EXTENDER, "extender", namespace, spec=spec)


def _kube_scheduler(plan: Plan, ext: ExtenderPlan, config_yaml: str) -> list[Obj]:
    ns, component, account = plan.namespace, "extender-scheduler", (plan.namespace, SCHEDULER)
    cluster_name = k8s.global_name(SCHEDULER, ns)
    out = [k8s.service_account(SCHEDULER, ns, component, token=True)]
    # kube-scheduler's own bootstrap roles: what every kube-scheduler needs, maintained by the API server.
    for builtin in ("system:kube-scheduler", "system:volume-scheduler"):
        out.append(k8s.binding(f"{cluster_name}:{builtin}", component, ("ClusterRole", builtin), account))
    # Its HTTPS endpoint reads the client-CA ConfigMap kube-system/extension-apiserver-authentication.
    reader = "extension-apiserver-authentication-reader"
    out.append(k8s.binding(f"{cluster_name}:{reader}", component, ("Role", reader), account, "kube-system"))
    # system:kube-scheduler may create any Lease but get/update only the one named kube-scheduler: add ours.
    lease = k8s.rule("coordination.k8s.io", ["leases"], ["get", "update"], [SCHEDULER])
    out.append(k8s.role(SCHEDULER, ns, component, [lease]))
    out.append(k8s.binding(SCHEDULER, component, ("Role", SCHEDULER), account, ns))
    config = k8s.config_map(SCHEDULER, ns, component, {"config.yaml": config_yaml})
    out.append(config)
    inputs = [config]
    volumes = [k8s.config_volume("config", SCHEDULER, CONFIG_DIR), k8s.TMP]
    if ext.https:
        if ext.tls is not None:
            tls = ext.tls
            client = k8s.tls_secret(CLIENT_SECRET, ns, component, tls.ca_pem, tls.client_cert_pem, tls.client_key_pem)
            out.append(client)
            inputs.append(client)  # kube-scheduler reads its extender's certificates at start: a new one rolls it
        volumes.append(k8s.secret_volume("extender-tls", CLIENT_SECRET, CLIENT_DIR))
    container = k8s.Container(
        "kube-scheduler",
        ext.kube_scheduler_image,
        [f"--config={CONFIG_DIR}/config.yaml", "--v=2"],
        "https",
        KUBE_SCHEDULER_PORT,
        "HTTPS",
        health="/livez",
        cpu="100m",
        memory="64Mi",
        volumes=volumes,
        command=["kube-scheduler"],
    )
    out.append(
        k8s.deployment(SCHEDULER, ns, component, container, service_account=SCHEDULER, token=True, inputs=inputs)
    )
    return out
