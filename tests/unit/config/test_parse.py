"""Parsing extender configuration documents: durations, data, passthrough keys, errors with their paths."""

from __future__ import annotations

import base64

import pytest

from kubesched.config.duration import Duration
from kubesched.config.parse import parse_document
from kubesched.config.render import render_config
from kubesched.config.v1 import (
    Extender,
    LegacyPolicy,
    SchedulerConfigV1,
    TLSConfig,
)
from kubesched.errors import ConfigurationError
from tests.unit.config.extenders import PEM, URL, v1


def parse_errors(doc: object) -> list[str]:
    with pytest.raises(ConfigurationError) as info:
        parse_document(doc)
    return [str(e) for e in info.value.errors]


def test_parse_reads_durations_data_and_passthrough_keys() -> None:
    doc = v1(
        {"urlPrefix": URL, "httpTimeout": "1h2m3.5s", "tlsConfig": {"caData": base64.b64encode(b"CA").decode()}},
        parallelism=8,
        profiles=[{"schedulerName": "s", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
    )
    config = parse_document(doc)
    assert isinstance(config, SchedulerConfigV1)
    assert config.extenders[0].http_timeout == Duration.parse("1h2m3.5s")
    assert config.extenders[0].tls_config == TLSConfig(ca_data=b"CA")
    assert config.extra == {"parallelism": 8}
    assert render_config(config)["profiles"] == doc["profiles"]


def test_parse_unknown_field_is_an_error_with_its_path() -> None:
    assert parse_errors(v1({"urlPrefix": URL, "enableHttps": True, "filtreVerb": "f"})) == [
        "extenders[0].enableHttps: unknown field; the v1 API spells it 'enableHTTPS' and keys are case-sensitive"
        " (enableHttps is the legacy Policy spelling)",
        "extenders[0].filtreVerb: unknown field; did you mean 'filterVerb'?",
    ]


def test_parse_wrong_types_are_errors_with_their_paths() -> None:
    doc = v1(
        {"urlPrefix": URL, "weight": "2", "nodeCacheCapable": "yes", "httpTimeout": 5},
        {"urlPrefix": URL, "httpTimeout": "5", "managedResources": ["example.com/a"]},
        {"urlPrefix": URL, "tlsConfig": {"caData": PEM}},
    )
    assert parse_errors(doc) == [
        "extenders[0].weight: must be an integer",
        'extenders[0].httpTimeout: must be a duration string such as "5s" or "1m30s"',
        "extenders[0].nodeCacheCapable: must be a boolean",
        'extenders[1].httpTimeout: missing unit in duration "5" (expected a Go duration such as "500ms", "5s" or'
        ' "1m30s")',
        "extenders[1].managedResources[0]: must be an object",
        "extenders[2].tlsConfig.caData: must be base64-encoded data; this looks like PEM text: base64-encode it first",
    ]


def test_parse_rejects_removed_api_versions_and_other_kinds() -> None:
    assert parse_errors({**v1(), "apiVersion": "kubescheduler.config.k8s.io/v1beta3"}) == [
        "apiVersion: must be 'kubescheduler.config.k8s.io/v1': v1beta3 is not accepted since Kubernetes 1.29"
    ]
    assert parse_errors({"kind": "Pod"})[0].startswith("kind: must be 'KubeSchedulerConfiguration'")
    assert parse_errors([1]) == ["<document>: must be an object (a KubeSchedulerConfiguration or a Policy)"]


def test_legacy_policy_keys_are_case_insensitive_and_timeout_is_nanoseconds() -> None:
    doc = {"kind": "Policy", "apiVersion": "v1", "extenders": [{"URLPrefix": URL, "enablehttps": False}]}
    assert parse_document(doc) == LegacyPolicy(extenders=(Extender(url_prefix=URL),))
    doc["extenders"] = [{"urlPrefix": URL, "httpTimeout": "5s"}]
    assert parse_errors(doc) == [
        "extenders[0].httpTimeout: must be an integer number of nanoseconds in a legacy Policy (5000000000 = 5s)"
    ]
