"""Render the model as plain dicts (a v1 `KubeSchedulerConfiguration` or a legacy `Policy`) and dump them as text.

Keys follow the Go struct order and Go's `omitempty`: zero values are left out, except `urlPrefix` (no omitempty
upstream) and `leaderElect` (always written so the intent is visible).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Literal

from kubesched.config.v1 import (
    API_VERSION,
    KIND,
    LEGACY_KIND,
    Extender,
    LeaderElectionV1,
    SchedulerConfigV1,
    TLSConfig,
)
from kubesched.config.validation import unreserved_message, unreserved_resources
from kubesched.config.yamlout import dump_yaml

Format = Literal["yaml", "json"]


def render_config(config: SchedulerConfigV1) -> dict[str, object]:
    """The `KubeSchedulerConfiguration` document for `config`."""
    doc: dict[str, object] = {"apiVersion": API_VERSION, "kind": KIND}
    if config.leader_election is not None:
        doc["leaderElection"] = _leader_election(config.leader_election)
    client_connection: dict[str, object] = {}
    if config.kubeconfig:
        client_connection["kubeconfig"] = config.kubeconfig
    client_connection.update(config.client_connection_extra)
    if client_connection:
        doc["clientConnection"] = client_connection
    if config.profiles:
        doc["profiles"] = [{"schedulerName": p.scheduler_name, **p.extra} for p in config.profiles]
    if config.extenders:
        doc["extenders"] = [render_extender(e) for e in config.extenders]
    for key, value in config.extra.items():
        doc.setdefault(key, value)
    return doc


def render_extender(extender: Extender, *, legacy: bool = False) -> dict[str, object]:
    """One `extenders` entry; `legacy=True` gives the pre-1.23 Policy spelling."""
    out: dict[str, object] = {"urlPrefix": extender.url_prefix}
    _put(out, "filterVerb", extender.filter_verb)
    _put(out, "preemptVerb", extender.preempt_verb)
    _put(out, "prioritizeVerb", extender.prioritize_verb)
    _put(out, "weight", extender.weight)
    _put(out, "bindVerb", extender.bind_verb)
    # The legacy LegacyExtender struct spelled it enableHttps; v1 spells it enableHTTPS.
    _put(out, "enableHttps" if legacy else "enableHTTPS", extender.enable_https)
    if extender.tls_config is not None:
        out["tlsConfig"] = render_tls(extender.tls_config)
    if extender.http_timeout is not None and extender.http_timeout.nanoseconds != 0:
        # v1: metav1.Duration, a string. Legacy: a bare time.Duration, i.e. an integer of nanoseconds.
        timeout = extender.http_timeout
        out["httpTimeout"] = timeout.nanoseconds if legacy else str(timeout)
    _put(out, "nodeCacheCapable", extender.node_cache_capable)
    if extender.managed_resources:
        out["managedResources"] = [
            {"name": r.name, **({"ignoredByScheduler": True} if r.ignored_by_scheduler else {})}
            for r in extender.managed_resources
        ]
    _put(out, "ignorable", extender.ignorable)
    return out


def render_tls(tls: TLSConfig) -> dict[str, object]:
    """`tlsConfig`, with the `*Data` fields base64-encoded as Go encodes `[]byte`."""
    out: dict[str, object] = {}
    _put(out, "insecure", tls.insecure)
    _put(out, "serverName", tls.server_name)
    _put(out, "certFile", tls.cert_file)
    _put(out, "keyFile", tls.key_file)
    _put(out, "caFile", tls.ca_file)
    for key, data in (("certData", tls.cert_data), ("keyData", tls.key_data), ("caData", tls.ca_data)):
        if data:
            out[key] = base64.b64encode(data).decode("ascii")
    return out


def render_legacy_policy(extenders: Sequence[Extender]) -> dict[str, object]:
    """A `kind: Policy` file (kube-scheduler < 1.23) holding only extenders.

    predicates and priorities are omitted on purpose: an absent list means "use the default set", whereas an
    empty list would switch every in-tree predicate or priority off.
    """
    return {
        "kind": LEGACY_KIND,
        "apiVersion": "v1",
        "extenders": [render_extender(e, legacy=True) for e in extenders],
    }


def dump(doc: object, fmt: Format = "yaml") -> str:
    """Serialise a rendered document; YAML keeps the key order given."""
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    return dump_yaml(doc)


def _leader_election(le: LeaderElectionV1) -> dict[str, object]:
    out: dict[str, object] = {"leaderElect": le.leader_elect}
    out.update(le.extra)
    _put(out, "resourceLock", le.resource_lock)
    _put(out, "resourceName", le.resource_name)
    _put(out, "resourceNamespace", le.resource_namespace)
    return out


def _put(out: dict[str, object], key: str, value: str | int | bool) -> None:
    # Go's omitempty: "", 0 and false are left out.
    if value:
        out[key] = value


def unreserved_note(extenders: Sequence[Extender]) -> str:
    """YAML comment lines saying which managed resources nobody can reserve ("" when none)."""
    lines: list[str] = []
    for i, ext in enumerate(extenders):
        names = unreserved_resources(ext)
        if names:
            text = f"WARNING: no bindVerb, so managed resources cannot be reserved: extenders[{i}].bindVerb "
            lines += _wrap(text + unreserved_message(names))
    return "".join(f"# {line}\n" for line in lines)


def _wrap(text: str, width: int = 100) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]
