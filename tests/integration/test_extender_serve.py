"""`kubesched extender serve` as users run it: the example node file, HTTPS with client certificates,
and bad command lines that end with a clear message instead of a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesched import pki
from kubesched.testing.process import free_port
from kubesched.testing.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_REQUEST = json.loads((ROOT / "examples" / "filter-request.json").read_text())


def serve(*args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "kubesched", "extender", "serve", "--policy", "custom-label", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_up(url: str, proc: subprocess.Popen[str], **kw: Any) -> None:
    def alive() -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read() if proc.stdout else ''}")

    def ready() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{url}/readyz", timeout=2, **kw).status_code == 200
        return False

    wait_until(ready, f"{url} ready", within=20, alive=alive)


@pytest.fixture
def example_server() -> Iterator[str]:
    port = free_port()
    proc = serve(
        "--nodes", str(ROOT / "examples" / "nodes.yaml"), "--listen", f"127.0.0.1:{port}", "--prefix", "/sched"
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # reaps it and closes its output pipe
        assert proc.returncode == 0


def test_example_file_serves_the_policy(example_server: str) -> None:
    r = httpx.post(f"{example_server}/sched/filter", json=EXAMPLE_REQUEST)
    assert r.status_code == 200
    assert r.json() == {
        "Nodes": None,
        "NodeNames": ["gpu-a"],
        "FailedNodes": {"gpu-b": "Insufficient example.com/custom-resource"},
        "FailedAndUnresolvableNodes": {
            "cordoned": "node(s) were unschedulable",
            "plain": "node(s) didn't have label custom",
        },
        "Error": "",
    }
    bad = httpx.post(f"{example_server}/sched/filter", content=b'{"Pod": 1}')
    assert bad.status_code == 400 and "$.Pod" in bad.text
    assert httpx.post(f"{example_server}/sched/filter", json=EXAMPLE_REQUEST).status_code == 200


def test_https_with_client_certificates(tmp_path: Path) -> None:
    ca = pki.new_ca("test-ca")
    server = pki.issue(ca, "extender", dns_names=["localhost"], ip_addresses=["127.0.0.1"], server=True)
    client = pki.issue(ca, "kube-scheduler", client=True)
    paths = {}
    for name, pem in {
        "ca.crt": ca.cert_pem,
        "tls.crt": server.cert_pem,
        "tls.key": server.key_pem,
        "client.crt": client.cert_pem,
        "client.key": client.key_pem,
    }.items():
        (tmp_path / name).write_bytes(pem)
        paths[name] = str(tmp_path / name)
    port = free_port()
    proc = serve(
        "--nodes",
        str(ROOT / "examples" / "nodes.yaml"),
        "--listen",
        f"127.0.0.1:{port}",
        "--tls-cert",
        paths["tls.crt"],
        "--tls-key",
        paths["tls.key"],
        "--client-ca",
        paths["ca.crt"],
    )
    url = f"https://127.0.0.1:{port}"
    with_cert = ssl.create_default_context(cafile=paths["ca.crt"])
    with_cert.load_cert_chain(paths["client.crt"], paths["client.key"])
    try:
        wait_up(url, proc, verify=with_cert)
        r = httpx.post(f"{url}/filter", json=EXAMPLE_REQUEST, verify=with_cert)
        assert r.status_code == 200 and r.json()["NodeNames"] == ["gpu-a"]
        without_cert = ssl.create_default_context(cafile=paths["ca.crt"])
        refused = httpx.post(f"{url}/filter", json=EXAMPLE_REQUEST, verify=without_cert)
        assert refused.status_code == 401 and "needs a client certificate" in refused.text
        assert httpx.get(f"{url}/readyz", verify=without_cert).status_code == 200  # probes need no certificate
        stranger = pki.client_cert(pki.new_ca("another CA"), "kube-scheduler")
        stranger.write(tmp_path / "stranger.crt", tmp_path / "stranger.key")
        another_ca = ssl.create_default_context(cafile=paths["ca.crt"])
        another_ca.load_cert_chain(tmp_path / "stranger.crt", tmp_path / "stranger.key")
        with pytest.raises(httpx.HTTPError):  # a certificate the client CA did not sign: no TLS session
            httpx.post(f"{url}/filter", json=EXAMPLE_REQUEST, verify=another_ca)
        with pytest.raises(httpx.HTTPError):  # plain HTTP to the TLS port is refused, not served
            httpx.post(f"http://127.0.0.1:{port}/filter", json=EXAMPLE_REQUEST)
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # reaps it and closes its output pipe


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--listen", "nowhere"], "--listen: expected HOST:PORT"),
        (["--nodes", "/does/not/exist.yaml"], "cannot read"),
        (["--tls-cert", "x.pem"], "--tls-cert and --tls-key go together"),
        ([], "no cluster to talk to: give --kubeconfig FILE, set KUBECONFIG=FILE"),
        (["--kubeconfig", "/does/not/exist"], "cannot read"),
        (["--nodes", "x.yaml", "--reservation-ttl", "0"], "--reservation-ttl: must be a positive number"),
        (["--nodes", "x.yaml", "--reservation-ttl", "nan"], "--reservation-ttl: must be a positive number"),
        (["--nodes", "x.yaml", "--reservation-ttl", "soon"], "--reservation-ttl: invalid float value"),
    ],
)
def test_bad_command_lines(args: list[str], says: str, tmp_path: Path) -> None:
    # No cluster around: no $KUBECONFIG, no ~/.kube/config, not in a pod.
    away = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
    env = {**{k: v for k, v in os.environ.items() if k not in away}, "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "kubesched", "extender", "serve", "--policy", "custom-label", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert out.returncode == 2
    assert says in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_node_file_names_the_item(tmp_path: Path) -> None:
    f = tmp_path / "nodes.yaml"
    f.write_text("items:\n- metadata: {name: a}\n- metadata: {name: b}\n  spec: {unschedulable: maybe}\n")
    out = subprocess.run(
        [sys.executable, "-m", "kubesched", "extender", "serve", "--policy", "custom-label", "--nodes", str(f)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    assert "$.items[1]" in out.stderr and "unschedulable" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_policy_lists_the_built_ins() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesched",
            "extender",
            "serve",
            "--policy",
            "nope",
            "--nodes",
            str(ROOT / "examples" / "nodes.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    assert "unknown policy 'nope'" in out.stderr and "custom-label" in out.stderr
