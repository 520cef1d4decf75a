"""Rendering the chart deploy/helm/kubesched with a real helm, and the normal form both renderings are compared in."""

from __future__ import annotations

import base64
import copy
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.deploy import extender, tls, webhook
from kubesched.deploy.plan import WebhookTLS
from kubesched.testing import build

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "kubesched"
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/instance")
HASH = re.compile(r"^[0-9a-f]{64}$")


def helm_binary() -> Path:
    """helm, built from the Go module proxy on first use; without Go a skip, which CI=true turns into a failure."""
    try:
        return build.ensure_helm(echo=True)
    except build.BuildError as err:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"CI=true and helm cannot be built: {err}")
        pytest.skip(f"helm cannot be built: {err}")


def run_helm(helm: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HELM_CACHE_HOME": "/tmp/kubesched-helm/cache",
        "HELM_CONFIG_HOME": "/tmp/kubesched-helm/config",
    }
    env["HELM_DATA_HOME"] = "/tmp/kubesched-helm/data"
    proc = subprocess.run([str(helm), *argv], capture_output=True, text=True, env=env, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


# The Prometheus Operator's API, as a cluster serving its CRDs advertises it (helm template --api-versions).
PROMETHEUS_OPERATOR = ("monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule")


def template(
    helm: Path, values: Obj, tmp: Path, namespace: str = "kubesched", api_versions: tuple[str, ...] = ()
) -> list[Obj]:
    """`helm template` of the chart with `values`, as objects; `api_versions`: APIs the cluster serves beyond the
    built-in ones."""
    path = tmp / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    extra = [f"--api-versions={v}" for v in api_versions]
    argv = ["template", "kubesched", str(CHART), "--namespace", namespace, "-f", str(path), *extra]
    out = run_helm(helm, *argv).stdout
    return [o for o in yaml.safe_load_all(out) if o]


def normal(objects: list[Obj], *, namespace: str) -> dict[tuple[str, str], Obj]:
    """Objects by (kind, name), in a form where the chart's and the CLI's renderings are equal: helm's own labels
    dropped, embedded YAML parsed, and what is made anew on each rendering (certificates, the inputs hash) checked
    and then replaced by a placeholder."""
    out: dict[tuple[str, str], Obj] = {}
    ca_bundles = set()
    extender_cas = set()
    for original in objects:
        if original["kind"] == "Namespace":
            continue  # the chart installs into the release namespace (helm --create-namespace)
        obj = copy.deepcopy(original)
        meta = obj["metadata"]
        _labels(meta)
        if obj["kind"] == "ConfigMap":
            obj["data"] = {k: yaml.safe_load(v) if k.endswith(".yaml") else v for k, v in obj.get("data", {}).items()}
        if obj["kind"] == "Deployment":
            _labels(obj["spec"]["template"]["metadata"])
            annotations = obj["spec"]["template"]["metadata"].get("annotations", {})
            if "kubesched.io/inputs-sha256" in annotations:
                assert HASH.match(annotations["kubesched.io/inputs-sha256"]), annotations
                annotations["kubesched.io/inputs-sha256"] = "<hash>"
        if obj["kind"] == "Secret" and meta["name"] in (extender.TLS_SECRET, extender.CLIENT_SECRET):
            # The extender's and kube-scheduler's certificates: each verifies against the CA both carry.
            pems = WebhookTLS(*(base64.b64decode(obj["data"][k]) for k in ("ca.crt", "tls.crt", "tls.key")))
            serving = meta["name"] == extender.TLS_SECRET
            found = tls.problems(pems, extender.dns_name(namespace), check_name=serving)
            assert found == [], f"{meta['name']}: {found}"
            extender_cas.add(obj["data"]["ca.crt"])
            obj["data"] = {k: "<pem>" for k in obj["data"]}
        if obj["kind"] == "Secret" and meta["name"] == webhook.TLS_SECRET:
            pems = WebhookTLS(*(base64.b64decode(obj["data"][k]) for k in ("ca.crt", "tls.crt", "tls.key")))
            assert tls.problems(pems, webhook.dns_name(namespace)) == [], "the certificate would not serve"
            ca_bundles.add(obj["data"]["ca.crt"])
            obj["data"] = {k: "<pem>" for k in obj["data"]}
        if obj["kind"].endswith("WebhookConfiguration"):
            for hook in obj["webhooks"]:
                if "caBundle" in hook["clientConfig"]:
                    ca_bundles.add(hook["clientConfig"]["caBundle"])
                    hook["clientConfig"]["caBundle"] = "<pem>"
        key = (obj["kind"], meta["name"])
        assert key not in out, f"{key} rendered twice"
        out[key] = obj
    assert len(ca_bundles) <= 1, "the caBundle is not the CA of the Secret"
    assert len(extender_cas) <= 1, "the extender's and kube-scheduler's certificates have different CAs"
    return out


def _labels(meta: Obj) -> None:
    labels = meta.get("labels", {})
    for key in HELM_LABELS:
        labels.pop(key, None)
    labels["app.kubernetes.io/managed-by"] = "<tool>"
