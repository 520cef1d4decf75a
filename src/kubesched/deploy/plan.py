"""What to deploy: the inputs of `render`, as plain values, checked all at once.

A `Plan` says which components are enabled and how; everything the renderer derives (RBAC, probes, exclusions,
failure policies) follows from it. Reading files, loading policies and webhook configs, and making certificates
is the caller's job (the CLI), so rendering stays a pure function of the plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kubesched.config.v1 import ManagedResource
from kubesched.errors import ConfigurationError, FieldError
from kubesched.versions import KUBERNETES_VERSION

DEFAULT_NAMESPACE = "kubesched"
DEFAULT_IMAGE = "kubesched:0.1.0"
KUBE_SCHEDULER_IMAGE = f"registry.k8s.io/kube-scheduler:v{KUBERNETES_VERSION}"
DEFAULT_SCHEDULER_NAME = "kubesched"
DEFAULT_EXTENDER_SCHEDULER_NAME = "kubesched-extender-scheduler"
DEFAULT_POLICY = "custom-label"
DEFAULT_WEBHOOK_TIMEOUT = 5
# Always kept out of the webhooks' reach, beside our own namespace (with failurePolicy Fail and the webhook down,
# nothing could recreate the webhook's own pods otherwise): the control plane's pods.
ALWAYS_EXCLUDED = ("kube-system",)
# What the webhook depends on besides: cert-manager issues its certificate (cert-manager mode). Replaced, not
# extended, by --exclude-namespace / webhook.excludeNamespaces.
DEFAULT_EXCLUDED = ("cert-manager",)
# A failurePolicy Fail applies only in namespaces carrying this label; elsewhere the same rules fail open.
FAIL_CLOSED_LABEL = ("kubesched.io/webhook", "enabled")

FailurePolicy = Literal["Fail", "Ignore"]
WatchPods = Literal["auto", "yes", "no"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
_CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


class DeployError(ConfigurationError):
    """A plan that cannot be rendered; `problems` are `(field, message)` pairs, field as in the dataclasses."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("", [FieldError(f, m) for f, m in problems])


@dataclass(frozen=True)
class ExtenderTLS:
    """PEM bytes of the extender's HTTPS (`--bind`): the CA that signed both certificates, the extender's serving
    certificate and key, and kube-scheduler's client certificate and key (its `tlsConfig`)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    client_cert_pem: bytes
    client_key_pem: bytes


@dataclass(frozen=True)
class ExtenderPlan:
    """The extender behind a second kube-scheduler.

    `policy` is the `--policy` argument as the container sees it; `policy_files` are files mounted beside it
    (a user's policy.py) at `/etc/kubesched/policy/`. `watch_pods` is `extender serve --watch-pods`: auto watches
    them unless every plugin of the policy declares it reads none. With `bind`, kube-scheduler calls the extender
    over HTTPS with a client certificate (`tls`; None: the kustomize base makes the Secrets).
    """

    policy: str = DEFAULT_POLICY
    policy_files: Mapping[str, str] = field(default_factory=dict)
    managed_resources: tuple[ManagedResource, ...] = ()
    bind: bool = False
    scheduler_name: str = DEFAULT_EXTENDER_SCHEDULER_NAME
    kube_scheduler_image: str = KUBE_SCHEDULER_IMAGE
    watch_pods: WatchPods = "auto"
    tls: ExtenderTLS | None = None

    @property
    def may_watch_pods(self) -> bool:
        """The extender may list+watch pods (its RBAC): unless `--watch-pods no`."""
        return self.watch_pods != "no"

    @property
    def https(self) -> bool:
        """kube-scheduler reaches the extender over HTTPS with a client certificate: when it binds."""
        return self.bind


@dataclass(frozen=True)
class SchedulerPlan:
    """kubesched's own scheduler (`kubesched scheduler run`).

    `config` is the user's KubeSchedulerConfiguration (checked by the caller), its `pluginModules` files already
    pointing at `/etc/kubesched/plugins/`, where `plugin_files` are mounted; None: one profile, `scheduler_name`.
    """

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    config: Mapping[str, Any] | None = None
    plugin_files: Mapping[str, str] = field(default_factory=dict)

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        """The schedulerNames the scheduler serves: its config's profiles, else `scheduler_name`."""
        profiles = self.config.get("profiles") if self.config else None
        if isinstance(profiles, list) and profiles:
            return tuple(str(p.get("schedulerName", "default-scheduler")) for p in profiles if isinstance(p, Mapping))
        return (self.scheduler_name,)


@dataclass(frozen=True)
class WebhookRules:
    """What the renderer needs to know of a webhook config file (the CLI reads it with `kubesched.webhook`)."""

    config_yaml: str
    operations: tuple[str, ...] = ("CREATE",)
    mutates: bool = False
    validates: bool = False
    can_deny: bool = False  # some validating rule can refuse a pod
    # Every validating rule judges only pods of these schedulers; None: some rule judges every pod.
    scheduler_scope: tuple[str, ...] | None = None
    needs_nodes: bool = False  # a feasibility rule: list+watch nodes
    files: Mapping[str, str] = field(default_factory=dict)  # python rule files, beside config.yaml


@dataclass(frozen=True)
class WebhookTLS:
    """PEM bytes: the CA that signed the serving certificate (the caBundle), the certificate and its key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True)
class WebhookPlan:
    """The admission webhook. `tls=None` leaves the Secret and the caBundle out (the kustomize base makes them)."""

    rules: WebhookRules
    tls: WebhookTLS | None = None
    exclude_namespaces: tuple[str, ...] = DEFAULT_EXCLUDED
    # (key, value): namespaces where a failurePolicy Fail holds; pods elsewhere are judged but admitted when down.
    fail_closed_label: tuple[str, str] = FAIL_CLOSED_LABEL
    validating_failure_policy: FailurePolicy | None = None  # None: Fail when a rule can deny, else Ignore
    timeout_seconds: int = DEFAULT_WEBHOOK_TIMEOUT
    # `webhook serve --managed-resource`: per-node gauges; the webhook then watches nodes and pods (to count requests).
    managed_resources: tuple[str, ...] = ()

    @property
    def uses_api(self) -> bool:
        """The webhook calls the API server: feasibility rules (nodes) or managed resources (nodes and pods)."""
        return self.rules.needs_nodes or bool(self.managed_resources)

    @property
    def failure_policy(self) -> FailurePolicy:
        if self.validating_failure_policy is not None:
            return self.validating_failure_policy
        # A denying rule that silently stops applying while the webhook is down defeats its purpose;
        # a warning is not worth blocking a pod for.
        return "Fail" if self.rules.can_deny else "Ignore"


@dataclass(frozen=True)
class Plan:
    """Everything to deploy into one namespace; a component left None is not deployed."""

    namespace: str = DEFAULT_NAMESPACE
    image: str = DEFAULT_IMAGE
    extender: ExtenderPlan | None = None
    scheduler: SchedulerPlan | None = None
    webhook: WebhookPlan | None = None

    def excluded_namespaces(self) -> list[str]:
        """The namespaces no webhook ever sees, in a stable order."""
        extra = self.webhook.exclude_namespaces if self.webhook else ()
        return list(dict.fromkeys([*ALWAYS_EXCLUDED, self.namespace, *extra]))

    def problems(self) -> list[tuple[str, str]]:
        """Every reason this plan cannot be rendered."""
        out: list[tuple[str, str]] = []
        if not _DNS_LABEL.match(self.namespace) or len(self.namespace) > 63:
            out.append(("namespace", f"{self.namespace!r} is not a DNS label (lower-case letters, digits, '-')"))
        for name, image in (("image", self.image), ("kube_scheduler_image", _ks_image(self))):
            if not image or any(c.isspace() for c in image):
                out.append((name, f"{image!r} is not an image reference"))
        if not (self.extender or self.scheduler or self.webhook):
            out.append(("plan", "nothing to deploy: enable the extender, the scheduler or the webhook"))
        names = [("scheduler.scheduler_name", n) for n in (self.scheduler.scheduler_names if self.scheduler else ())]
        if self.extender:
            names.append(("extender.scheduler_name", self.extender.scheduler_name))
        for key, name in names:
            if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
                message = f"{name!r} is not a DNS subdomain, as a pod's spec.schedulerName must be"
                out.append((key, message))
        if self.extender and self.scheduler and self.extender.scheduler_name in self.scheduler.scheduler_names:
            message = f"the scheduler and the extender's kube-scheduler both use {self.extender.scheduler_name!r}"
            out.append(("extender.scheduler_name", message))
        if self.extender is not None:
            out += [("policy_files", f"{k!r} is not a file name") for k in self.extender.policy_files if not _key(k)]
        if self.scheduler is not None:
            files = self.scheduler.plugin_files
            out += [("plugin_files", f"{k!r} is not a file name") for k in files if not _key(k)]
        if self.webhook is not None:
            out += _webhook_problems(self.webhook)
        return out


def _ks_image(plan: Plan) -> str:
    return plan.extender.kube_scheduler_image if plan.extender else KUBE_SCHEDULER_IMAGE


def _key(name: str) -> bool:
    return bool(_CONFIGMAP_KEY.match(name)) and name != "config.yaml" and len(name) <= 253


def _webhook_problems(hook: WebhookPlan) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if not 1 <= hook.timeout_seconds <= 30:
        out.append(("timeout_seconds", f"must be 1-30 (the API server's limit), got {hook.timeout_seconds}"))
    for ns in hook.exclude_namespaces:
        if not _DNS_LABEL.match(ns):
            out.append(("exclude_namespaces", f"{ns!r} is not a namespace name"))
    key, value = hook.fail_closed_label
    if not _LABEL_KEY.match(key) or len(key.rpartition("/")[2]) > 63:
        out.append(("fail_closed_label", f"{key!r} is not a label key"))
    if not _LABEL_VALUE.match(value):
        out.append(("fail_closed_label", f"{value!r} is not a label value"))
    if not (hook.rules.mutates or hook.rules.validates):
        out.append(("rules", "the webhook config has no rule: nothing to register"))
    out += [("rules.files", f"{k!r} is not a file name beside config.yaml") for k in hook.rules.files if not _key(k)]
    return out
