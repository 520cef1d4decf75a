"""Shared by the extender-configuration tests: a valid extender, its problems, a v1 document."""

from __future__ import annotations

from pathlib import Path

from kubesched.config.duration import Duration
from kubesched.config.v1 import (
    Extender,
    SchedulerConfigV1,
)
from kubesched.config.validation import validate

GOLDEN = Path(__file__).parents[2] / "golden" / "config-extender-default.yaml"
URL = "http://kubesched-extender.kube-system.svc:8888/scheduler"
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def ext(**kw: object) -> Extender:
    """A valid extender with the CLI's defaults, overridden by `kw`."""
    base: dict[str, object] = {
        "url_prefix": URL,
        "filter_verb": "filter",
        "prioritize_verb": "prioritize",
        "weight": 1,
        "http_timeout": Duration.of(seconds=5),
        "node_cache_capable": True,
    }
    return Extender(**{**base, **kw})  # type: ignore[arg-type]


def problems(*extenders: Extender, **config: object) -> list[str]:
    return [str(e) for e in validate(SchedulerConfigV1(extenders=extenders, **config))]  # type: ignore[arg-type]


def v1(*extenders: dict[str, object], **top: object) -> dict[str, object]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": list(extenders),
        **top,
    }
