"""Certificates rotated on disk under load, with no failed request.

The webhook is registered with the real kube-apiserver (failurePolicy Fail: a failed call is a refused pod) and
pods are created in a loop by many clients at once while its serving certificate is renewed three times: twice as
kubelet updates a mounted Secret (cert-manager mode: a new `..data` directory swapped in by one rename) and once in
place as `kubesched certs --force` writes (tls.crt first, tls.key a poll later: a mismatched pair in between, which
is refused and counted while the previous pair is still served). Each new certificate is signed by the CA the
caBundle holds. Afterwards the new certificate is the one served (read from a handshake) and the metrics agree.

The extender with TLS and client certificates gets the same treatment from concurrent clients, one handshake per
request, while its certificate and then its client CA are rotated.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509

from kubesched import pki
from kubesched.cluster.kubeclient import APIError
from kubesched.testing.builders import pod_manifest
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import wait_until

from .test_webhook_apiserver import hook, register

ROOT = Path(__file__).resolve().parents[2]
KUBESCHED = [sys.executable, "-m", "kubesched"]
RUN = uuid.uuid4().hex[:8]
SELECT = f"kubesched-rotation-{RUN}"
SCHEDULER = "kubesched-rot"
CONFIG = f"""
apiVersion: kubesched.io/v1alpha1
kind: WebhookConfig
operations: [CREATE]
rules:
- name: custom-label
  requireLabel: {{schedulerName: {SCHEDULER}, label: custom}}
"""
WORKERS = 4  # at first; each rotation adds as many
MAX_WORKERS = 4 * WORKERS
POLL = 2.0  # ServingTLS's interval
SETTLE = POLL * 1.5  # a poll is sure to have run


class SecretVolume:
    """A directory as kubelet lays out a Secret volume: `name` -> `..data/name`, `..data` -> `..<n>/`. An update
    writes a new `..<n>/` and renames a new `..data` link over the old one: every file changes at once."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True)
        self.generation = 0

    def update(self, files: dict[str, bytes]) -> None:
        self.generation += 1
        gen = self.dir / f"..{self.generation}"
        gen.mkdir()
        for name, data in files.items():
            (gen / name).write_bytes(data)
        link = self.dir / "..data_tmp"
        link.symlink_to(gen.name)
        os.replace(link, self.dir / "..data")
        for name in files:
            if not (self.dir / name).is_symlink():
                (self.dir / name).symlink_to(f"..data/{name}")

    def path(self, name: str) -> Path:
        return self.dir / name


def served_serial(port: int, ca: Path, client: tuple[Path, Path] | None = None) -> int:
    """The serial number of the certificate a new handshake with 127.0.0.1:port gets."""
    ctx = ssl.create_default_context(cafile=str(ca))
    if client:
        ctx.load_cert_chain(*client)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in the metrics:\n{text}")


@dataclass
class Load:
    """Requests in a loop from `WORKERS` threads until stopped; every failure is kept."""

    send: Callable[[int, int], None]
    done: int = 0
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _pool: ThreadPoolExecutor = field(init=False)
    _futures: list[Future[None]] = field(init=False)

    def worker(self, w: int) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                self.send(w, i)
            except Exception as err:  # every failure is the finding
                with self.lock:
                    self.failures.append(f"worker {w} request {i}: {type(err).__name__}: {err}")
            else:
                with self.lock:
                    self.done += 1

    @contextlib.contextmanager
    def running(self, workers: int = WORKERS) -> Iterator[Load]:
        with ThreadPoolExecutor(MAX_WORKERS) as pool:
            self._pool, self._futures = pool, []
            self.more(workers)
            try:
                yield self
            finally:
                self.stop.set()
                for f in self._futures:
                    f.result()

    def more(self, n: int) -> None:
        """Start `n` more workers: the server is sent more requests at once than it has connections open for, so
        it gets new connections (new handshakes) besides the ones kept alive."""
        start = len(self._futures)
        self._futures += [self._pool.submit(self.worker, w) for w in range(start, start + n)]

    def wait_for(self, n: int, within: float = 60) -> None:
        """Until `n` more requests have succeeded (the load is really running at this point)."""
        target = self.done + n
        wait_until(lambda: self.done >= target or bool(self.failures), f"{n} requests", within=within)


def start(argv: list[str], log: Path, url: str, verify: ssl.SSLContext) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        proc = subprocess.Popen([*KUBESCHED, *argv], stdout=out, stderr=subprocess.STDOUT)

    def alive() -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}:\n{log.read_text()}")

    def ready() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{url}/readyz", verify=verify, timeout=2).status_code == 200
        return False

    try:
        wait_until(ready, f"{url} ready", within=30, alive=alive)
    except BaseException:
        proc.kill()
        proc.wait(10)
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def serving(ca: pki.CertKey) -> pki.CertKey:
    return pki.serving_cert(ca, "kubesched-webhook.kubesched.svc", ip_addresses=["127.0.0.1"])


@pytest.mark.controlplane
def test_webhook_certificate_rotation_under_load_fails_no_pod_creation(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, ns = control_plane, kube_namespace
    ca = pki.new_ca("kubesched webhook CA")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    volume = SecretVolume(tmp_path / "tls")
    first = serving(ca)
    volume.update({"ca.crt": ca.cert_pem, "tls.crt": first.cert_pem, "tls.key": first.key_pem})
    (tmp_path / "webhook.yaml").write_text(CONFIG)
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    trust = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    argv = ["webhook", "serve", "--config", str(tmp_path / "webhook.yaml"), "--listen", f"127.0.0.1:{port}"]
    argv += ["--tls-cert", str(volume.path("tls.crt")), "--tls-key", str(volume.path("tls.key"))]
    proc = start([*argv, "--log-format", "text"], tmp_path / "webhook.log", url, trust)
    cleanups: list[Callable[[], Any]] = [lambda: stop(proc)]
    try:
        validating = hook("validate.rotation.kubesched.io", f"{url}/validate", tmp_path / "ca.crt", {SELECT: "on"})
        cleanups.insert(0, register(cp, "ValidatingWebhookConfiguration", f"kubesched-rotation-{RUN}", [validating]))
        cp.api("PATCH", f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {SELECT: "on"}}})
        unlabelled = pod_manifest("probe", labels={}, schedulerName=SCHEDULER)

        def judged() -> bool:
            try:
                cp.api("POST", f"/api/v1/namespaces/{ns}/pods", unlabelled, params={"dryRun": "All"})
            except APIError as err:
                return err.status == 403
            return False

        wait_until(judged, "the webhook called by the API server", within=30)

        def create(w: int, i: int) -> None:
            body = pod_manifest(f"p-{w}-{i}", labels={"custom": "yes"}, schedulerName=SCHEDULER)
            created = cp.api("POST", f"/api/v1/namespaces/{ns}/pods", body)
            assert created["metadata"]["name"] == f"p-{w}-{i}"

        load = Load(create)
        with load.running():
            load.wait_for(50)
            # cert-manager mode: the Secret renewed, kubelet swaps the volume's files at once.
            second = serving(ca)
            volume.update({"ca.crt": ca.cert_pem, "tls.crt": second.cert_pem, "tls.key": second.key_pem})
            time.sleep(SETTLE)
            load.more(WORKERS)
            load.wait_for(50)
            assert served_serial(port, tmp_path / "ca.crt") == second.certificate().serial_number
            # generate mode, `kubesched certs --force` style: in place, the key a poll after the certificate.
            third = serving(ca)
            gen = volume.dir / "..data"
            (gen / "tls.crt").write_bytes(third.cert_pem)
            time.sleep(SETTLE)
            load.wait_for(20)
            assert served_serial(port, tmp_path / "ca.crt") == second.certificate().serial_number  # still
            (gen / "tls.key").write_bytes(third.key_pem)
            time.sleep(SETTLE)
            load.more(WORKERS)
            load.wait_for(50)
            # And once more as kubelet does.
            last = serving(ca)
            volume.update({"ca.crt": ca.cert_pem, "tls.crt": last.cert_pem, "tls.key": last.key_pem})
            time.sleep(SETTLE)
            load.more(WORKERS)
            load.wait_for(200)
        assert load.failures == [], f"{len(load.failures)} of {load.done + len(load.failures)} failed"
        assert load.done >= 420
        assert served_serial(port, tmp_path / "ca.crt") == last.certificate().serial_number
        text = httpx.get(f"{url}/metrics", verify=trust, timeout=5).text
        assert metric(text, 'kubesched_serving_certificate_reloads_total{result="applied"}') == 3
        assert metric(text, 'kubesched_serving_certificate_reloads_total{result="refused"}') == 1
        not_after = last.certificate().not_valid_after_utc.timestamp()
        assert metric(text, "kubesched_serving_certificate_expiration_timestamp_seconds") == not_after
        # Every pod the clients were told was created is there: admitted by the webhook, not around it.
        pods = cp.api("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        assert len(pods) == load.done and all(p["metadata"]["labels"] == {"custom": "yes"} for p in pods)
        assert judged()  # and the webhook still judges
        log = (tmp_path / "webhook.log").read_text()
        assert "changed but do not load (KEY_VALUES_MISMATCH)" in log, log
    finally:
        for cleanup in cleanups:
            cleanup()


def test_extender_tls_rotation_under_load_fails_no_request(tmp_path: Path) -> None:
    """kube-scheduler's side: a client certificate per request, a new handshake per request; the serving
    certificate is renewed, then the client CA moves to a new one (both CAs trusted during the move)."""
    server_ca, old_clients, new_clients = pki.new_ca("extender CA"), pki.new_ca("clients 1"), pki.new_ca("clients 2")
    (tmp_path / "ca.crt").write_bytes(server_ca.cert_pem)
    volume = SecretVolume(tmp_path / "tls")
    first = pki.serving_cert(server_ca, "extender", ip_addresses=["127.0.0.1"])
    volume.update({"tls.crt": first.cert_pem, "tls.key": first.key_pem, "client-ca.crt": old_clients.cert_pem})
    identities = {}
    for name, ca in (("old", old_clients), ("new", new_clients)):
        pair = pki.client_cert(ca, "kube-scheduler")
        identities[name] = pair.write(tmp_path / f"{name}.crt", tmp_path / f"{name}.key")
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    use = {"identity": "old"}

    def context() -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        ctx.load_cert_chain(*identities[use["identity"]])
        return ctx

    argv = ["extender", "serve", "--policy", "custom-label", "--nodes", str(ROOT / "examples" / "nodes.yaml")]
    argv += ["--listen", f"127.0.0.1:{port}", "--tls-cert", str(volume.path("tls.crt"))]
    argv += ["--tls-key", str(volume.path("tls.key")), "--client-ca", str(volume.path("client-ca.crt"))]
    proc = start(argv, tmp_path / "extender.log", url, context())
    request = json.loads((ROOT / "examples" / "filter-request.json").read_text())

    def send(w: int, i: int) -> None:
        with httpx.Client(verify=context(), timeout=10) as client:  # a new connection: a new handshake
            r = client.post(f"{url}/filter", json=request)
        assert r.status_code == 200 and r.json()["NodeNames"] == ["gpu-a"], r.text

    try:
        load = Load(send)
        with load.running(3 * WORKERS):
            load.wait_for(100)
            second = pki.serving_cert(server_ca, "extender", ip_addresses=["127.0.0.1"])
            both = old_clients.cert_pem + new_clients.cert_pem
            volume.update({"tls.crt": second.cert_pem, "tls.key": second.key_pem, "client-ca.crt": both})
            time.sleep(SETTLE)
            load.wait_for(100)
            assert served_serial(port, tmp_path / "ca.crt", identities["old"]) == second.certificate().serial_number
            use["identity"] = "new"  # the scheduler's client certificate renewed from the new CA
            load.wait_for(100)
            only_new = {"tls.crt": second.cert_pem, "tls.key": second.key_pem, "client-ca.crt": new_clients.cert_pem}
            volume.update(only_new)
            time.sleep(SETTLE)
            load.wait_for(100)
        assert load.failures == [], f"{len(load.failures)} of {load.done + len(load.failures)} failed"
        assert served_serial(port, tmp_path / "ca.crt", identities["new"]) == second.certificate().serial_number
        with pytest.raises((ssl.SSLError, ConnectionError, httpx.HTTPError)):  # the old CA's clients: refused now
            use["identity"] = "old"
            send(0, 0)
        use["identity"] = "new"
        with httpx.Client(verify=context(), timeout=10) as client:
            text = client.get(f"{url}/metrics").text
        assert metric(text, 'kubesched_serving_certificate_reloads_total{result="applied"}') == 2
        assert metric(text, 'kubesched_serving_certificate_reloads_total{result="refused"}') == 0
    finally:
        stop(proc)
