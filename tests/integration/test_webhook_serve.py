"""`kubesched webhook serve` as users run it: HTTPS with certificates from `kubesched certs`, nodes from a file,
bad requests answered with 400 while it keeps serving, a clean exit on SIGTERM."""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from kubesched.testing.process import free_port
from kubesched.testing.waiting import WaitTimeout, wait_until

ROOT = Path(__file__).resolve().parents[2]
KUBESCHED = [sys.executable, "-m", "kubesched"]


@dataclass
class Webhook:
    """A `kubesched webhook serve` child process on 127.0.0.1 and the CA that signed its certificate."""

    proc: subprocess.Popen[bytes]
    url: str
    ca: Path
    log: Path

    def tls(self) -> ssl.SSLContext:
        """A client context trusting only the webhook's CA."""
        return ssl.create_default_context(cafile=str(self.ca))

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(15)

    def output(self) -> str:
        return self.log.read_text()


def make_certs(out: Path) -> Path:
    """ca.crt, tls.crt, tls.key for a webhook the API server calls at https://127.0.0.1."""
    subprocess.run(
        [
            *KUBESCHED,
            "certs",
            "--out",
            str(out),
            "--service",
            "kubesched-webhook",
            "--namespace",
            "kubesched",
            "--ip",
            "127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return out


def start_webhook(workdir: Path, config: str, *args: str, timeout: float = 30) -> Webhook:
    """Write the config, make certificates, start the server and wait until /readyz answers 200."""
    workdir.mkdir(parents=True, exist_ok=True)
    pki = make_certs(workdir / "pki")
    (workdir / "webhook.yaml").write_text(config)
    port = free_port()
    log = workdir / "webhook.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *KUBESCHED,
                "webhook",
                "serve",
                "--config",
                str(workdir / "webhook.yaml"),
                "--tls-cert",
                str(pki / "tls.crt"),
                "--tls-key",
                str(pki / "tls.key"),
                "--listen",
                f"127.0.0.1:{port}",
                "--log-format",
                "text",
                *args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    hook = Webhook(proc, f"https://127.0.0.1:{port}", pki / "ca.crt", log)

    def alive() -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"webhook exited with {proc.returncode}:\n{hook.output()}")

    def ready() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{hook.url}/readyz", verify=hook.tls(), timeout=2).status_code == 200
        return False

    try:
        wait_until(ready, "the webhook ready", within=timeout, alive=alive)
    except WaitTimeout:
        hook.stop()
        raise TimeoutError(f"webhook not ready after {timeout}s:\n{hook.output()}") from None
    return hook


CONFIG = """
rules:
- name: custom-label
  requireLabel: {schedulerName: kubesched, label: custom}
- name: can-fit
  feasibility: {action: deny}
"""


def review(uid: str, obj: object) -> dict[str, object]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": "default",
            "object": obj,
        },
    }


def test_serves_https_judges_pods_and_survives_bad_requests(tmp_path: Path) -> None:
    hook = start_webhook(tmp_path, CONFIG, "--nodes", str(ROOT / "examples" / "nodes.yaml"))
    ca = hook.tls()
    try:
        big = {
            "spec": {
                "schedulerName": "kubesched",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "64"}}}],
            }
        }
        r = httpx.post(f"{hook.url}/validate", json=review("u-1", big), verify=ca)
        assert r.status_code == 200
        response = r.json()["response"]
        assert response["uid"] == "u-1" and response["allowed"] is False
        assert response["status"]["code"] == 403
        assert response["status"]["message"] == (
            'pods of scheduler "kubesched" must carry the label "custom" (rule custom-label); '
            "pod can never be scheduled: 0/4 nodes are available: 1 node(s) were unschedulable, "
            "3 Insufficient cpu. (rule can-fit)"
        )
        bad = httpx.post(f"{hook.url}/validate", content=b'{"apiVersion": "admission.k8s.io/v1"', verify=ca)
        assert bad.status_code == 400 and "not valid JSON" in bad.text
        no_uid = httpx.post(f"{hook.url}/mutate", json={**review("", {}), "kind": "AdmissionReview"}, verify=ca)
        assert no_uid.status_code == 400 and "request.uid" in no_uid.text
        ok = httpx.post(f"{hook.url}/validate", json=review("u-2", {"spec": {}}), verify=ca)
        assert ok.json()["response"] == {"uid": "u-2", "allowed": True}
        with pytest.raises(httpx.HTTPError):  # plain HTTP on the TLS port is refused, not served
            httpx.post(f"{hook.url.replace('https', 'http')}/validate", json=review("u-3", {}))
        metrics = httpx.get(f"{hook.url}/metrics", verify=ca).text
        assert "kubesched_webhook_nodes 4.0" in metrics
    finally:
        code = hook.stop()
    assert code == 0, hook.output()
    assert "Traceback" not in hook.output()


def test_without_a_feasibility_rule_it_needs_no_cluster(tmp_path: Path) -> None:
    config = "rules:\n- requireLabel: {schedulerName: kubesched, label: custom}\n"
    hook = start_webhook(tmp_path, config)  # no --nodes, no kubeconfig: ready at once
    try:
        assert httpx.get(f"{hook.url}/healthz", verify=hook.tls()).text == "ok"
    finally:
        assert hook.stop() == 0


def test_refuses_to_start_without_tls() -> None:
    out = subprocess.run(
        [*KUBESCHED, "webhook", "serve", "--config", str(ROOT / "examples" / "webhook-config.yaml")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    assert "serves HTTPS only" in out.stderr and "Traceback" not in out.stderr
