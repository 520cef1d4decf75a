"""Read a `KubeSchedulerConfiguration` (v1) or a legacy `Policy` document (a dict from YAML or JSON) into the model.

Like kube-scheduler's strict decoder, unknown fields and wrong types are errors; every one is collected, with its
field path, before anything is raised. v1 keys are matched exactly as the API spells them; the legacy Policy was
decoded case-insensitively, and so is it here. Keys kube-scheduler knows but kubesched does not model are
type-checked and carried through in `extra`.
"""

from __future__ import annotations

import base64
import binascii
import difflib
from collections.abc import Callable, Mapping, Sequence

from kubesched.config import yamlin
from kubesched.config.duration import Duration
from kubesched.config.v1 import (
    API_VERSION,
    KIND,
    LEGACY_API_VERSIONS,
    LEGACY_KIND,
    Extender,
    LeaderElectionV1,
    LegacyPolicy,
    ManagedResource,
    ProfileV1,
    SchedulerConfigV1,
    TLSConfig,
)
from kubesched.errors import ConfigurationError, FieldError, child, index

DOCUMENT = yamlin.DOCUMENT
_Check = Callable[[object], str | None]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v: object) -> str | None:
    return None if _is_int(v) else "must be an integer"


def _bool(v: object) -> str | None:
    return None if isinstance(v, bool) else "must be a boolean"


def _str(v: object) -> str | None:
    return None if isinstance(v, str) else "must be a string"


def _number(v: object) -> str | None:
    return None if _is_int(v) or isinstance(v, float) else "must be a number"


def _mapping(v: object) -> str | None:
    return None if isinstance(v, Mapping) else "must be an object"


def _list(v: object) -> str | None:
    return None if isinstance(v, list) else "must be a list"


def _duration(v: object) -> str | None:
    if not isinstance(v, str):
        return 'must be a duration string such as "15s"'
    try:
        Duration.parse(v)
    except ValueError as err:
        return str(err)
    return None


# Keys kube-scheduler accepts that kubesched only type-checks and passes through.
_TOP_EXTRA: dict[str, _Check] = {
    "parallelism": _int,
    "enableProfiling": _bool,
    "enableContentionProfiling": _bool,
    "percentageOfNodesToScore": _int,
    "podInitialBackoffSeconds": _int,
    "podMaxBackoffSeconds": _int,
    "delayCacheUntilActive": _bool,
}
_CLIENT_EXTRA: dict[str, _Check] = {"acceptContentTypes": _str, "contentType": _str, "qps": _number, "burst": _int}
_LEADER_EXTRA: dict[str, _Check] = {"leaseDuration": _duration, "renewDeadline": _duration, "retryPeriod": _duration}
_PROFILE_EXTRA: dict[str, _Check] = {"percentageOfNodesToScore": _int, "plugins": _mapping, "pluginConfig": _list}
_LEGACY_EXTRA: dict[str, _Check] = {
    "predicates": _list,
    "priorities": _list,
    "hardPodAffinitySymmetricWeight": _int,
    "alwaysCheckAllPredicates": _bool,
}
_EXTENDER_KEYS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_KEYS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")


class _Reader:
    """Typed access to one mapping; records unknown keys and type errors against `path` into `errors`."""

    def __init__(
        self, obj: Mapping[object, object], path: str, errors: list[FieldError], known: Sequence[str], *, legacy: bool
    ) -> None:
        self.path = path
        self.errors = errors
        self.legacy = legacy
        self.values: dict[str, object] = {}
        by_folded = {k.lower(): k for k in known}
        for key, value in obj.items():
            name = key if isinstance(key, str) else str(key)
            canonical = by_folded.get(name.lower()) if legacy else (name if name in known else None)
            if canonical is None:
                self.error(name, _unknown_field_message(name, known, by_folded))
            elif value is not None:
                # Go leaves a field at its zero value when the document says null.
                self.values[canonical] = value

    def error(self, key: str, message: str) -> None:
        self.errors.append(FieldError(child(self.path, key), message))

    def _typed(self, key: str, check: _Check) -> object | None:
        value = self.values.get(key)
        if value is None:
            return None
        problem = check(value)
        if problem:
            self.error(key, problem)
            return None
        return value

    def string(self, key: str) -> str:
        value = self._typed(key, _str)
        return value if isinstance(value, str) else ""

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self._typed(key, _bool)
        return value if isinstance(value, bool) else default

    def integer(self, key: str) -> int:
        value = self._typed(key, _int)
        return value if isinstance(value, int) else 0

    def mapping(self, key: str, known: Sequence[str]) -> _Reader | None:
        value = self._typed(key, _mapping)
        if not isinstance(value, Mapping):
            return None
        return _Reader(value, child(self.path, key), self.errors, known, legacy=self.legacy)

    def items(self, key: str, known: Sequence[str]) -> list[_Reader | None]:
        """Each element of a list of objects; a non-object element is reported and kept as None (indexes hold)."""
        value = self._typed(key, _list)
        if not isinstance(value, list):
            return []
        out: list[_Reader | None] = []
        for i, item in enumerate(value):
            item_path = index(child(self.path, key), i)
            if isinstance(item, Mapping):
                out.append(_Reader(item, item_path, self.errors, known, legacy=self.legacy))
            else:
                self.errors.append(FieldError(item_path, "must be an object"))
                out.append(None)
        return out

    def extra(self, checks: Mapping[str, _Check]) -> dict[str, object]:
        """The pass-through keys that are present and well typed, in document order."""
        out: dict[str, object] = {}
        for key in self.values:
            if key in checks:
                value = self._typed(key, checks[key])
                if value is not None:
                    out[key] = value
        return out


def _unknown_field_message(name: str, known: Sequence[str], by_folded: Mapping[str, str]) -> str:
    same_but_case = by_folded.get(name.lower())
    if same_but_case is not None:
        hint = " (enableHttps is the legacy Policy spelling)" if name == "enableHttps" else ""
        return f"unknown field; the v1 API spells it {same_but_case!r} and keys are case-sensitive{hint}"
    close = difflib.get_close_matches(name, known, n=1)
    return f"unknown field; did you mean {close[0]!r}?" if close else "unknown field"


def load_text(text: str) -> object:
    """Parse YAML or JSON text (JSON is read as YAML); any problem, a duplicate key too, is a ConfigurationError."""
    doc, errors = read_text(text)
    if errors:
        raise ConfigurationError(errors=errors)
    return doc


def read_text(text: str) -> tuple[object, list[FieldError]]:
    """The document in ``text`` and its problems (None when it cannot be read): duplicate keys, limits."""
    return yamlin.load(text)


def parse_document(doc: object) -> SchedulerConfigV1 | LegacyPolicy:
    """The model for `doc`, or ConfigurationError listing every problem."""
    model, errors = read_document(doc)
    if errors or model is None:
        raise ConfigurationError(errors=errors)
    return model


def read_document(doc: object) -> tuple[SchedulerConfigV1 | LegacyPolicy | None, list[FieldError]]:
    """Best effort: a model (bad fields left at their zero values) plus every problem found."""
    errors: list[FieldError] = []
    if not isinstance(doc, Mapping):
        return None, [FieldError(DOCUMENT, "must be an object (a KubeSchedulerConfiguration or a Policy)")]
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if kind == LEGACY_KIND:
        if api_version not in LEGACY_API_VERSIONS:
            errors.append(FieldError("apiVersion", f"a Policy must have apiVersion {' or '.join(LEGACY_API_VERSIONS)}"))
        return _legacy(doc, errors), errors
    if kind != KIND:
        errors.append(FieldError("kind", f"must be {KIND!r} (or {LEGACY_KIND!r} for a legacy policy file)"))
        return None, errors
    if api_version != API_VERSION:
        errors.append(FieldError("apiVersion", _api_version_message(api_version)))
    return _config(_Reader(doc, "", errors, _top_keys(), legacy=False)), errors


def _api_version_message(api_version: object) -> str:
    removed = {"v1beta3": "1.29", "v1beta2": "1.28", "v1beta1": "1.23", "v1alpha2": "1.23", "v1alpha1": "1.19"}
    version = str(api_version).rpartition("/")[2]
    if str(api_version).startswith("kubescheduler.config.k8s.io/") and version in removed:
        return f"must be {API_VERSION!r}: {version} is not accepted since Kubernetes {removed[version]}"
    return f"must be {API_VERSION!r}"


def _top_keys() -> tuple[str, ...]:
    return ("apiVersion", "kind", "leaderElection", "clientConnection", "profiles", "extenders", *_TOP_EXTRA)


def _config(r: _Reader) -> SchedulerConfigV1:
    leader = r.mapping(
        "leaderElection", ("leaderElect", "resourceLock", "resourceName", "resourceNamespace", *_LEADER_EXTRA)
    )
    client = r.mapping("clientConnection", ("kubeconfig", *_CLIENT_EXTRA))
    profiles = tuple(
        ProfileV1(p.string("schedulerName"), p.extra(_PROFILE_EXTRA)) if p else ProfileV1("")
        for p in r.items("profiles", ("schedulerName", *_PROFILE_EXTRA))
    )
    return SchedulerConfigV1(
        extenders=_extenders(r),
        profiles=profiles,
        leader_election=None
        if leader is None
        else LeaderElectionV1(
            # Upstream defaults leaderElect to true when it is left out.
            leader_elect=leader.boolean("leaderElect", default=True),
            resource_name=leader.string("resourceName"),
            resource_namespace=leader.string("resourceNamespace"),
            resource_lock=leader.string("resourceLock"),
            extra=leader.extra(_LEADER_EXTRA),
        ),
        kubeconfig=client.string("kubeconfig") if client else "",
        client_connection_extra=client.extra(_CLIENT_EXTRA) if client else {},
        extra=r.extra(_TOP_EXTRA),
    )


def _legacy(doc: Mapping[object, object], errors: list[FieldError]) -> LegacyPolicy:
    r = _Reader(doc, "", errors, ("kind", "apiVersion", "extenders", *_LEGACY_EXTRA), legacy=True)
    return LegacyPolicy(extenders=_extenders(r), extra=r.extra(_LEGACY_EXTRA))


def _extenders(r: _Reader) -> tuple[Extender, ...]:
    keys = tuple("enableHttps" if k == "enableHTTPS" and r.legacy else k for k in _EXTENDER_KEYS)
    return tuple(_extender(e) if e else Extender(url_prefix="") for e in r.items("extenders", keys))


def _extender(e: _Reader) -> Extender:
    tls = e.mapping("tlsConfig", _TLS_KEYS)
    return Extender(
        url_prefix=e.string("urlPrefix"),
        filter_verb=e.string("filterVerb"),
        preempt_verb=e.string("preemptVerb"),
        prioritize_verb=e.string("prioritizeVerb"),
        bind_verb=e.string("bindVerb"),
        weight=e.integer("weight"),
        enable_https=e.boolean("enableHttps" if e.legacy else "enableHTTPS"),
        tls_config=_tls(tls) if tls else None,
        http_timeout=_timeout(e),
        node_cache_capable=e.boolean("nodeCacheCapable"),
        managed_resources=tuple(
            ManagedResource(m.string("name"), m.boolean("ignoredByScheduler")) if m else ManagedResource("")
            for m in e.items("managedResources", ("name", "ignoredByScheduler"))
        ),
        ignorable=e.boolean("ignorable"),
    )


def _timeout(e: _Reader) -> Duration | None:
    value = e.values.get("httpTimeout")
    if value is None:
        return None
    if e.legacy:
        # The legacy field was a bare time.Duration: JSON integer nanoseconds.
        if isinstance(value, int) and not isinstance(value, bool):
            return Duration(value)
        e.error("httpTimeout", "must be an integer number of nanoseconds in a legacy Policy (5000000000 = 5s)")
        return None
    if not isinstance(value, str):
        e.error("httpTimeout", 'must be a duration string such as "5s" or "1m30s"')
        return None
    try:
        return Duration.parse(value)
    except ValueError as err:
        e.error("httpTimeout", f'{err} (expected a Go duration such as "500ms", "5s" or "1m30s")')
        return None


def _tls(t: _Reader) -> TLSConfig:
    return TLSConfig(
        insecure=t.boolean("insecure"),
        server_name=t.string("serverName"),
        cert_file=t.string("certFile"),
        key_file=t.string("keyFile"),
        ca_file=t.string("caFile"),
        cert_data=_data(t, "certData"),
        key_data=_data(t, "keyData"),
        ca_data=_data(t, "caData"),
    )


def _data(t: _Reader, key: str) -> bytes:
    """A `[]byte` field: base64 text in the document. Go's decoder ignores line breaks, so we do too."""
    text = t.string(key)
    if not text:
        return b""
    try:
        return base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        hint = "; this looks like PEM text: base64-encode it first" if text.lstrip().startswith("-----BEGIN") else ""
        t.error(key, f"must be base64-encoded data{hint}")
        return b""
