"""The versioned document, `kubescheduler.config.k8s.io/v1`, as written: its extenders and the parts around them.

`SchedulerConfigV1`, `ProfileV1` and `LeaderElectionV1` are the file as kube-scheduler reads it (what `config
extender` and `manifests` render, what `config validate` checks); the scheduler runs from what `profiles.py` makes of
it, `SchedulerConfiguration`. `Extender` and its parts are shared by both.

Field defaults are the Go zero values of `kubescheduler.config.k8s.io/v1`, so a parsed document maps one to one onto
the model; the friendlier defaults of `kubesched config extender` live in the CLI. Rendering is in `render.py`,
parsing in `parse.py`, validation in `validation.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.config.duration import Duration

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
LEGACY_KIND = "Policy"
# The legacy Policy was registered in the core group ("v1") and, later, in the config group too.
LEGACY_API_VERSIONS = ("v1", API_VERSION)
DEFAULT_SCHEDULER_NAME = "default-scheduler"
# kube-scheduler uses this when httpTimeout is zero or unset (pkg/scheduler/extender.go DefaultExtenderTimeout).
DEFAULT_EXTENDER_TIMEOUT = Duration.of(seconds=5)


def _as_bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


@dataclass(frozen=True, slots=True, init=False)
class TLSConfig:
    """`tlsConfig`: how kube-scheduler's HTTP client talks TLS to the extender.

    The `*_data` fields hold the raw PEM (bytes, or text which is encoded as UTF-8); they are base64-encoded only
    when rendered, because the Go type is `[]byte`. kube-scheduler prefers `*Data` over `*File` when both are set.
    """

    insecure: bool
    server_name: str
    cert_file: str
    key_file: str
    ca_file: str
    cert_data: bytes
    key_data: bytes
    ca_data: bytes

    def __init__(
        self,
        *,
        insecure: bool = False,
        server_name: str = "",
        cert_file: str = "",
        key_file: str = "",
        ca_file: str = "",
        cert_data: bytes | str = b"",
        key_data: bytes | str = b"",
        ca_data: bytes | str = b"",
    ) -> None:
        # A hand-written __init__ so callers may pass PEM text while the attributes stay `bytes`.
        object.__setattr__(self, "insecure", insecure)
        object.__setattr__(self, "server_name", server_name)
        object.__setattr__(self, "cert_file", cert_file)
        object.__setattr__(self, "key_file", key_file)
        object.__setattr__(self, "ca_file", ca_file)
        object.__setattr__(self, "cert_data", _as_bytes(cert_data))
        object.__setattr__(self, "key_data", _as_bytes(key_data))
        object.__setattr__(self, "ca_data", _as_bytes(ca_data))

    @property
    def has_ca(self) -> bool:
        """Whether a CA is configured; without one kube-scheduler turns `insecure` on by itself."""
        return bool(self.ca_file or self.ca_data)


@dataclass(frozen=True, slots=True)
class ManagedResource:
    """One `managedResources` entry: an extended resource the extender is responsible for."""

    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class Extender:
    """One entry of the top-level `extenders` list (Go type `Extender`)."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: TLSConfig | None = None
    # None means "unset": kube-scheduler then uses DEFAULT_EXTENDER_TIMEOUT (so does an explicit zero).
    http_timeout: Duration | None = None
    node_cache_capable: bool = False
    managed_resources: tuple[ManagedResource, ...] = ()
    ignorable: bool = False

    @property
    def effective_timeout(self) -> Duration:
        """The timeout kube-scheduler will actually use."""
        if self.http_timeout is None or self.http_timeout.nanoseconds == 0:
            return DEFAULT_EXTENDER_TIMEOUT
        return self.http_timeout

    def is_interested(self, resource_names: Iterable[str]) -> bool:
        """kube-scheduler's `IsInterested`, given every resource name a pod's (init) containers request or limit."""
        if not self.managed_resources:
            return True
        managed = {r.name for r in self.managed_resources}
        return any(name in managed for name in resource_names)


@dataclass(frozen=True, slots=True)
class ProfileV1:
    """One `profiles` entry. Only `schedulerName` is modelled; `extra` keeps known upstream keys verbatim."""

    scheduler_name: str
    extra: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LeaderElectionV1:
    """`leaderElection`; empty strings mean "unset" (kube-scheduler defaults: leases, kube-scheduler, kube-system)."""

    leader_elect: bool = True
    resource_name: str = ""
    resource_namespace: str = ""
    resource_lock: str = ""
    # leaseDuration, renewDeadline, retryPeriod: kept verbatim.
    extra: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SchedulerConfigV1:
    """A `KubeSchedulerConfiguration` reduced to what kubesched generates and checks.

    `profiles=()` means "not set" (kube-scheduler then creates one `default-scheduler` profile). Known upstream keys
    that are not modelled (parallelism, percentageOfNodesToScore, ...) ride along in `extra`, and
    `client_connection_extra` does the same inside `clientConnection`.
    """

    extenders: tuple[Extender, ...] = ()
    profiles: tuple[ProfileV1, ...] = field(default_factory=lambda: (ProfileV1(DEFAULT_SCHEDULER_NAME),))
    leader_election: LeaderElectionV1 | None = None
    kubeconfig: str = ""
    client_connection_extra: Mapping[str, object] = field(default_factory=dict)
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def ignored_resources(self) -> tuple[str, ...]:
        """What kube-scheduler writes into every profile's `NodeResourcesFitArgs.ignoredResources`."""
        return tuple(r.name for e in self.extenders for r in e.managed_resources if r.ignored_by_scheduler)


@dataclass(frozen=True, slots=True)
class LegacyPolicy:
    """A pre-1.23 `kind: Policy` file. Only `extenders` is modelled; predicates and priorities stay in `extra`."""

    extenders: tuple[Extender, ...] = ()
    extra: Mapping[str, object] = field(default_factory=dict)
