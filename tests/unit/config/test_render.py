"""Rendering the extender configuration: golden file, representative config, legacy Policy, TLS data."""

from __future__ import annotations

import base64
import json

from kubesched.config.duration import Duration
from kubesched.config.parse import load_text, parse_document
from kubesched.config.render import dump, render_config, render_legacy_policy
from kubesched.config.v1 import (
    LeaderElectionV1,
    LegacyPolicy,
    ManagedResource,
    ProfileV1,
    SchedulerConfigV1,
    TLSConfig,
)
from tests.unit.config.extenders import GOLDEN, PEM, ext


def test_default_config_matches_golden_file() -> None:
    assert dump(render_config(SchedulerConfigV1(extenders=(ext(),)))) == GOLDEN.read_text()


def test_representative_config_renders_exactly() -> None:
    config = SchedulerConfigV1(
        extenders=(
            ext(
                url_prefix="https://ext.kube-system.svc:8443/scheduler",
                preempt_verb="preempt",
                bind_verb="bind",
                weight=2,
                enable_https=True,
                tls_config=TLSConfig(ca_data=PEM, cert_file="/etc/c.crt", key_file="/etc/c.key", server_name="ext"),
                http_timeout=Duration.of(minutes=1, seconds=30),
                managed_resources=(ManagedResource("example.com/gpu", ignored_by_scheduler=True),),
                ignorable=True,
            ),
        ),
        profiles=(ProfileV1("default-scheduler"), ProfileV1("kubesched")),
        leader_election=LeaderElectionV1(resource_name="kubesched-scheduler"),
        kubeconfig="/etc/kubernetes/scheduler.conf",
    )
    assert render_config(config) == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": True, "resourceName": "kubesched-scheduler"},
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"},
        "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "kubesched"}],
        "extenders": [
            {
                "urlPrefix": "https://ext.kube-system.svc:8443/scheduler",
                "filterVerb": "filter",
                "preemptVerb": "preempt",
                "prioritizeVerb": "prioritize",
                "weight": 2,
                "bindVerb": "bind",
                "enableHTTPS": True,
                "tlsConfig": {
                    "serverName": "ext",
                    "certFile": "/etc/c.crt",
                    "keyFile": "/etc/c.key",
                    "caData": base64.b64encode(PEM.encode()).decode(),
                },
                "httpTimeout": "1m30s",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                "ignorable": True,
            }
        ],
    }
    assert parse_document(load_text(dump(render_config(config)))) == config
    assert parse_document(json.loads(dump(render_config(config), "json"))) == config


def test_legacy_policy_uses_enable_https_and_nanoseconds() -> None:
    extender = ext(url_prefix="https://e:8443/s", enable_https=True, tls_config=TLSConfig(ca_file="/ca"))
    doc = render_legacy_policy([extender])
    assert doc == {
        "kind": "Policy",
        "apiVersion": "v1",
        "extenders": [
            {
                "urlPrefix": "https://e:8443/s",
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "enableHttps": True,
                "tlsConfig": {"caFile": "/ca"},
                "httpTimeout": 5_000_000_000,
                "nodeCacheCapable": True,
            }
        ],
    }
    assert parse_document(json.loads(dump(doc, "json"))) == LegacyPolicy(extenders=(extender,))


def test_tls_data_accepts_pem_text_or_bytes() -> None:
    assert TLSConfig(ca_data=PEM) == TLSConfig(ca_data=PEM.encode())
    assert TLSConfig(ca_data=PEM).ca_data == PEM.encode()
