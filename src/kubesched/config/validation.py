"""Validation of the model: kube-scheduler's own rules plus kubesched's stricter checks, and a list of warnings.

Every function returns all problems at once as `FieldError`s. Rules kube-scheduler enforces (its
`pkg/scheduler/apis/config/validation`) have `upstream=True`; kubesched's extra checks have `upstream=False` and
say so in their message, because kube-scheduler would start with such a file and then misbehave at run time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from kubesched.config.v1 import Extender, LegacyPolicy, SchedulerConfigV1
from kubesched.errors import FieldError, child, index

OURS = " (kubesched check; kube-scheduler itself accepts this)"
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
# Resource names in this domain are native (k8s.io/api core/v1 ResourceDefaultNamespacePrefix).
_NATIVE_DOMAIN = "kubernetes.io/"
_QUOTA_PREFIX = "requests."


def _q(value: str) -> str:
    """A string as kube-scheduler's field errors quote it."""
    return json.dumps(value)


def validate(model: SchedulerConfigV1 | LegacyPolicy) -> list[FieldError]:
    """Every error in a configuration or a legacy Policy (empty when it is valid)."""
    errors = validate_extenders(model.extenders)
    if isinstance(model, SchedulerConfigV1):
        errors += _validate_profiles(model)
        errors += _validate_leader_election(model)
        errors += _validate_scalars(model)
    return errors


def validate_extenders(extenders: Sequence[Extender], path: str = "extenders") -> list[FieldError]:
    """kube-scheduler's `validateExtenders`, then kubesched's checks of URL, TLS and timeout."""
    errors: list[FieldError] = []
    binders: list[str] = []
    seen: set[str] = set()
    for i, ext in enumerate(extenders):
        at = index(path, i)
        if ext.prioritize_verb and ext.weight <= 0:
            errors.append(
                FieldError(
                    child(at, "weight"),
                    f"Invalid value: {ext.weight}: must have a positive weight applied to it (prioritizeVerb is set)",
                )
            )
        if ext.bind_verb:
            binders.append(at)
        for j, resource in enumerate(ext.managed_resources):
            name_path = child(index(child(at, "managedResources"), j), "name")
            errors += [
                FieldError(name_path, f"Invalid value: {_q(resource.name)}: {m}")
                for m in extended_resource_name_errors(resource.name)
            ]
            # The seen-set spans the whole list, as upstream: one resource has one responsible extender.
            if resource.name in seen:
                message = f"Invalid value: {_q(resource.name)}: duplicate extender managed resource name"
                errors.append(FieldError(name_path, message))
            seen.add(resource.name)
        errors += _our_extender_checks(ext, at)
    if len(binders) > 1:
        found = ", ".join(binders)
        message = f'Invalid value: "found {len(binders)} extenders implementing bind": only one extender can implement'
        errors.append(FieldError(path, f"{message} bind ({found})"))
    return errors


def _our_extender_checks(ext: Extender, at: str) -> list[FieldError]:
    errors: list[FieldError] = []
    url_problem = _url_problem(ext.url_prefix)
    if url_problem:
        errors.append(FieldError(child(at, "urlPrefix"), url_problem + OURS, upstream=False))
    elif ext.enable_https and not ext.url_prefix.lower().startswith("https://"):
        errors.append(
            FieldError(
                child(at, "urlPrefix"),
                "must start with https:// when enableHTTPS is true: kube-scheduler uses the URL as written and"
                " enableHTTPS does not change the scheme" + OURS,
                upstream=False,
            )
        )
    if ext.http_timeout is not None and ext.http_timeout.nanoseconds < 0:
        errors.append(
            FieldError(child(at, "httpTimeout"), f"must not be negative (got {ext.http_timeout})" + OURS, False)
        )
    tls = ext.tls_config
    if tls is not None and not ext.enable_https:
        errors.append(
            FieldError(
                child(at, "tlsConfig"),
                "is ignored unless enableHTTPS is true; set enableHTTPS or remove tlsConfig" + OURS,
                upstream=False,
            )
        )
    if tls is not None and bool(tls.cert_file or tls.cert_data) != bool(tls.key_file or tls.key_data):
        # client-go refuses a client certificate without its key (and vice versa) when kube-scheduler starts.
        message = "a client certificate needs both a cert (certFile/certData) and a key (keyFile/keyData)"
        errors.append(FieldError(child(at, "tlsConfig"), message + OURS, upstream=False))
    return errors


def _url_problem(url: str) -> str | None:
    if not url:
        return "is required"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError as err:
        return f"is not a valid URL ({err})"
    if parts.scheme.lower() not in ("http", "https"):
        return f"must be an http:// or https:// URL (got {url!r})"
    if not host:
        return f"must name a host (got {url!r})"
    if parts.query or parts.fragment:
        return "must not have a query or fragment: kube-scheduler appends '/<verb>' to the whole string"
    return None


def extended_resource_name_errors(name: str) -> list[str]:
    """Why `name` cannot be a managed resource: upstream's IsQualifiedName, then IsExtendedResourceName."""
    problems = qualified_name_errors(name)
    if problems:
        return [f"is not a valid qualified name: {p}" for p in problems]
    invalid = "is an invalid extended resource name: "
    if "/" not in name:
        return [invalid + "it needs a domain prefix such as example.com/; names without one are native resources"]
    # Upstream tests containment of "kubernetes.io/", so any domain ending in kubernetes.io is reserved.
    if _NATIVE_DOMAIN in name:
        return [invalid + "domains ending in kubernetes.io are reserved for native resources"]
    if name.startswith(_QUOTA_PREFIX):
        return [invalid + f"names starting with {_QUOTA_PREFIX!r} are reserved for resource quota"]
    if qualified_name_errors(_QUOTA_PREFIX + name):
        return [invalid + f"its quota name {_QUOTA_PREFIX + name!r} is not a valid qualified name"]
    return []


def qualified_name_errors(value: str) -> list[str]:
    """k8s.io/apimachinery `validation.IsQualifiedName`, messages shortened (no regex dump)."""
    parts = value.split("/")
    if len(parts) > 2:
        return [f"a qualified name {_QUALIFIED_NAME_RULE}, with an optional DNS subdomain prefix and '/'"]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errors.append("prefix part must be no more than 253 characters")
        elif not _DNS1123_SUBDOMAIN.match(prefix):
            errors.append(
                "prefix part must be a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' or '.',"
                " starting and ending with an alphanumeric character"
            )
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.match(name):
        errors.append(f"name part {_QUALIFIED_NAME_RULE}")
    return errors


def _validate_profiles(config: SchedulerConfigV1) -> list[FieldError]:
    # An empty list is fine: kube-scheduler's defaulting adds the default-scheduler profile.
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, profile in enumerate(config.profiles):
        path = child(index("profiles", i), "schedulerName")
        if not profile.scheduler_name:
            errors.append(FieldError(path, "Required value"))
        elif profile.scheduler_name in seen:
            errors.append(FieldError(path, f"Duplicate value: {_q(profile.scheduler_name)}"))
        seen.add(profile.scheduler_name)
        pct = profile.extra.get("percentageOfNodesToScore")
        if isinstance(pct, int) and not 0 <= pct <= 100:
            at = child(index("profiles", i), "percentageOfNodesToScore")
            errors.append(FieldError(at, f"Invalid value: {pct}: not in valid range [0-100]"))
    return errors


def _validate_leader_election(config: SchedulerConfigV1) -> list[FieldError]:
    le = config.leader_election
    if le is None or not le.resource_lock or le.resource_lock == "leases":
        return []
    message = f'Invalid value: {_q(le.resource_lock)}: resourceLock value must be "leases"'
    if le.leader_elect:
        return [FieldError("leaderElection.resourceLock", message)]
    # Upstream checks the lock only while leader election is on; we insist anyway so switching it on stays safe.
    return [FieldError("leaderElection.resourceLock", message + OURS, upstream=False)]


def _validate_scalars(config: SchedulerConfigV1) -> list[FieldError]:
    """Upstream's range checks for the top-level numbers kubesched passes through."""
    extra = config.extra
    errors: list[FieldError] = []

    def number(key: str, default: int) -> int:
        value = extra.get(key, default)
        return value if isinstance(value, int) else default

    parallelism, pct = number("parallelism", 16), number("percentageOfNodesToScore", 0)
    if parallelism <= 0:
        errors.append(
            FieldError("parallelism", f"Invalid value: {parallelism}: should be an integer value greater than zero")
        )
    if not 0 <= pct <= 100:
        errors.append(FieldError("percentageOfNodesToScore", f"Invalid value: {pct}: not in valid range [0-100]"))
    initial, maximum = number("podInitialBackoffSeconds", 1), number("podMaxBackoffSeconds", 10)
    if initial <= 0:
        errors.append(FieldError("podInitialBackoffSeconds", f"Invalid value: {initial}: must be greater than 0"))
    if maximum < initial:
        message = f"Invalid value: {maximum}: must be greater than or equal to PodInitialBackoffSeconds"
        errors.append(FieldError("podMaxBackoffSeconds", message))
    return errors


def collect_warnings(model: SchedulerConfigV1 | LegacyPolicy) -> list[FieldError]:
    """Legal settings whose run-time effect surprises people; printed, never fatal."""
    out: list[FieldError] = []
    https_key = "enableHttps" if isinstance(model, LegacyPolicy) else "enableHTTPS"
    for i, ext in enumerate(model.extenders):
        at = index("extenders", i)
        tls = ext.tls_config
        if ext.enable_https and (tls is None or not tls.has_ca):
            out.append(
                FieldError(
                    child(at, "tlsConfig"),
                    "enableHTTPS without caFile or caData: kube-scheduler then sets insecure and does not verify"
                    " the extender's certificate; give the CA that signed it",
                )
            )
        elif ext.enable_https and tls is not None and tls.insecure:
            out.append(FieldError(child(at, "tlsConfig.insecure"), "skips verification of the extender's certificate"))
        if not ext.enable_https and ext.url_prefix.lower().startswith("https://"):
            out.append(
                FieldError(
                    child(at, https_key),
                    "is false with an https:// urlPrefix: kube-scheduler still uses TLS but ignores tlsConfig"
                    " and verifies the server against the system CA pool only",
                )
            )
        unreserved = unreserved_resources(ext)
        if unreserved:
            out.append(FieldError(child(at, "bindVerb"), unreserved_message(unreserved)))
        for j, resource in enumerate(ext.managed_resources):
            # An invalid name is already an error; a warning about it would only add noise.
            if not resource.ignored_by_scheduler and not extended_resource_name_errors(resource.name):
                out.append(
                    FieldError(
                        child(index(child(at, "managedResources"), j), "ignoredByScheduler"),
                        f"is false: kube-scheduler's NodeResourcesFit still checks node capacity for"
                        f" {resource.name!r}, so pods requesting it fit only nodes whose status.allocatable"
                        " lists it; set ignoredByScheduler if the extender accounts for it instead",
                    )
                )
    return out


def unreserved_resources(ext: Extender) -> list[str]:
    """Managed resources nobody reserves: kube-scheduler ignores them and the extender does not bind.

    kube-scheduler binds in the background and the extender never learns which node was chosen, so
    until the watch reports each binding, a burst of pods can be admitted past the node's capacity.
    """
    if ext.bind_verb:
        return []
    return [r.name for r in ext.managed_resources if r.ignored_by_scheduler]


def unreserved_message(names: Sequence[str]) -> str:
    listed = ", ".join(repr(n) for n in names)
    return (
        f"is empty while {listed} {'is' if len(names) == 1 else 'are'} ignoredByScheduler: kube-scheduler does not"
        " count it and, without a bind verb, the extender cannot know the chosen node to reserve it, so pods"
        " created in a burst can over-commit it; set bindVerb (kubesched extender serve answers 'bind')"
    )
