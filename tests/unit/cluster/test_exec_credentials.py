"""Exec credential plugins (client-go's rules): args, env, KUBERNETES_EXEC_INFO, caching until expiry,
re-run after expiry or a 401, client certificates, and clear errors for failing plugins; and the pool:
a 401 refreshes once and resends only idempotent requests."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched import pki
from kubesched.cluster.credentials import CredentialError, Credentials, ExecConfig
from kubesched.cluster.http1 import Pool
from kubesched.cluster.kubeconfig import from_kubeconfig

PLUGIN = """
import json, os, sys
state = sys.argv[1]
runs = os.path.join(state, "runs")
with open(runs, "a") as f:
    f.write(json.dumps({"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]), "args": sys.argv[2:],
                        "env": os.environ.get("PLUGIN_ENV")}) + "\\n")
status = json.load(open(os.path.join(state, "status.json")))
if "fail" in status:
    sys.stderr.write(status["fail"])
    sys.exit(3)
print(json.dumps({"apiVersion": os.environ.get("API", "client.authentication.k8s.io/v1"),
                  "kind": "ExecCredential", "status": status}))
"""


def plugin(tmp_path: Path, status: dict[str, Any]) -> Path:
    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "status.json").write_text(json.dumps(status))
    return tmp_path


def runs(state: Path) -> list[dict[str, Any]]:
    path = state / "runs"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def kubeconfig(tmp_path: Path, exec_section: dict[str, Any], **cluster: Any) -> Path:
    doc = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "eks-user"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k:6443", **cluster}}],
        "users": [{"name": "eks-user", "user": {"exec": exec_section}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_plugin_runs_with_args_env_and_exec_info_and_is_cached_until_expiry(tmp_path: Path) -> None:
    state = plugin(tmp_path, {"token": "t1", "expirationTimestamp": stamp(2_000_000_000)})
    exec_section = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(state / "plugin.py"), str(state), "--region", "eu"],
        "env": [{"name": "PLUGIN_ENV", "value": "yes"}],
        "interactiveMode": "Never",
        "provideClusterInfo": True,
    }
    ext = [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}]
    conn = from_kubeconfig(kubeconfig(tmp_path, exec_section, extensions=ext, **{"insecure-skip-tls-verify": True}))
    creds = conn.credentials
    assert creds is not None
    now = [1_999_999_000.0]
    creds.clock = lambda: now[0]
    assert creds.header() is None  # nothing run before the first request
    assert await creds.refresh() == "Bearer t1"
    assert creds.header() == "Bearer t1"
    [run] = runs(state)
    assert run["args"] == ["--region", "eu"] and run["env"] == "yes"
    assert run["info"] == {
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1",
        "spec": {
            "interactive": False,
            "cluster": {"server": "https://k:6443", "insecure-skip-tls-verify": True, "config": {"audience": "x"}},
        },
    }
    (state / "status.json").write_text(json.dumps({"token": "t2", "expirationTimestamp": stamp(2_000_001_000)}))
    assert await creds.refresh() == "Bearer t1" and len(runs(state)) == 1  # cached: not run again
    now[0] = 2_000_000_001.0  # past the expiry
    assert creds.header() is None
    assert await creds.refresh() == "Bearer t2" and len(runs(state)) == 2
    (state / "status.json").write_text(json.dumps({"token": "t3"}))
    assert await creds.refresh(rejected="Bearer t2") == "Bearer t3"  # a 401: run again although not expired
    assert await creds.refresh(rejected="Bearer t2") == "Bearer t3" and len(runs(state)) == 3  # already replaced


async def test_concurrent_refreshes_run_the_plugin_once(tmp_path: Path) -> None:
    state = plugin(tmp_path, {"token": "t"})
    creds = Credentials(
        "u",
        exec_config=ExecConfig(
            sys.executable, "client.authentication.k8s.io/v1", (str(state / "plugin.py"), str(state))
        ),
    )
    assert await asyncio.gather(*(creds.refresh() for _ in range(5))) == ["Bearer t"] * 5
    assert len(runs(state)) == 1


@pytest.mark.parametrize(
    ("status", "api", "message"),
    [
        ({"fail": "token expired, run aws sso login"}, None, "exit status 3: token expired, run aws sso login"),
        ({}, None, "neither a token nor a client certificate"),
        ({"token": "t"}, "client.authentication.k8s.io/v1beta1", "does not match"),
        ({"token": "t", "expirationTimestamp": "soon"}, None, "not RFC 3339"),
        ({"clientCertificateData": "x"}, None, "only one of"),
    ],
)
async def test_a_failing_plugin_names_the_user_and_command(
    tmp_path: Path, status: dict[str, Any], api: str | None, message: str
) -> None:
    state = plugin(tmp_path, status)
    env = (("API", api),) if api else ()
    ex = ExecConfig(sys.executable, "client.authentication.k8s.io/v1", (str(state / "plugin.py"), str(state)), env)
    creds = Credentials("eks-user", exec_config=ex)
    with pytest.raises(
        CredentialError, match=f"user 'eks-user': exec plugin '{re.escape(sys.executable)}'.*{re.escape(message)}"
    ):
        await creds.refresh()


async def test_a_missing_command_says_the_install_hint(tmp_path: Path) -> None:
    ex = ExecConfig("/nonexistent/aws", "client.authentication.k8s.io/v1beta1", install_hint="install the aws CLI")
    with pytest.raises(CredentialError, match=r"'/nonexistent/aws' cannot be run: .*install the aws CLI"):
        await Credentials("u", exec_config=ex).refresh()
    always = ExecConfig("x", "client.authentication.k8s.io/v1", interactive_mode="Always")
    with pytest.raises(CredentialError, match="needs a terminal"):
        await Credentials("u", exec_config=always).refresh()


async def test_a_plugin_client_certificate_makes_the_tls_context(tmp_path: Path) -> None:
    ca = pki.new_ca("ca")
    cert = pki.client_cert(ca, "plugin-user", ())
    state = plugin(tmp_path, {"clientCertificateData": cert.cert_pem.decode(), "clientKeyData": cert.key_pem.decode()})
    ex = ExecConfig(sys.executable, "client.authentication.k8s.io/v1", (str(state / "plugin.py"), str(state)))
    creds = Credentials("u", exec_config=ex)
    before = creds.ssl_context()
    assert await creds.refresh() == ""  # no bearer token: the certificate authenticates
    assert creds.ssl_context() is not before
    assert creds.ssl_context() is creds.ssl_context()  # built once


@pytest.fixture
async def auth_server() -> AsyncIterator[tuple[str, list[bytes]]]:
    """Accepts only 'Bearer new'; records each request line with its Authorization."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await answer(reader, writer)
        finally:
            writer.close()  # asyncio.start_server leaves it to the handler

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            lines = head.split(b"\r\n")
            auth = next((x.split(b":", 1)[1].strip() for x in lines if x.lower().startswith(b"authorization:")), b"")
            length = next((int(x.split(b":")[1]) for x in lines if x.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            seen.append(lines[0].split()[0] + b" " + auth)
            ok = auth == b"Bearer new"
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                if ok
                else b"HTTP/1.1 401 No\r\nContent-Length: 0\r\n\r\n"
            )
            await writer.drain()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with srv:
        yield f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}", seen


async def test_pool_refreshes_on_401_and_resends_only_idempotent_requests(
    tmp_path: Path, auth_server: tuple[str, list[bytes]]
) -> None:
    url, seen = auth_server
    token = tmp_path / "token"
    token.write_text("old")
    creds = Credentials("u", token_file=token)
    pool = Pool(url, True, {}, auth=creds)
    assert creds.header() == "Bearer old"
    token.write_text("new")  # rotated; the cached one is refused
    assert await pool.request("GET", "/api/v1/nodes") == (200, b"ok")
    assert seen == [b"GET Bearer old", b"GET Bearer new"]
    seen.clear()
    token.write_text("old")
    await creds.refresh(rejected="Bearer new")  # back to a refused token
    token.write_text("new")
    assert (await pool.request("POST", "/bindings", b"{}"))[0] == 401  # never resent
    assert seen == [b"POST Bearer old"]
    assert await pool.request("POST", "/bindings", b"{}") == (200, b"ok")  # the next one has the new token
    await pool.aclose()


async def test_client_certificate_files_are_reloaded_when_they_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A TLS server that requires a client certificate tells which one each new connection presented."""
    import os
    import ssl

    from kubesched.cluster.credentials import TLS

    ca = pki.new_ca("ca")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    pki.write_pair(pki.serving_cert(ca, "srv", ip_addresses=["127.0.0.1"]), tmp_path / "s.crt", tmp_path / "s.key")
    server.load_cert_chain(tmp_path / "s.crt", tmp_path / "s.key")
    server.load_verify_locations(cadata=ca.cert_pem.decode())
    server.verify_mode = ssl.CERT_REQUIRED

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        subject = dict(x[0] for x in writer.get_extra_info("peercert")["subject"])
        writer.write(subject["commonName"].encode())
        await writer.drain()
        writer.close()

    cert, key = tmp_path / "client.crt", tmp_path / "client.key"
    pki.write_pair(pki.client_cert(ca, "alice"), cert, key)
    creds = Credentials("u", tls=TLS(ca=ca.cert_pem, cert_file=cert, key_file=key))

    async def who(port: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=creds.ssl_context())
        name = await reader.read()
        writer.close()
        return name

    srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server)
    async with srv:
        port = srv.sockets[0].getsockname()[1]
        assert await who(port) == b"alice"
        first = creds.ssl_context()
        assert creds.ssl_context() is first  # unchanged files: the context is kept
        pki.write_pair(pki.client_cert(ca, "bob"), cert, key)  # rotated, as cert-manager or kubelet do
        later = os.stat(cert).st_mtime_ns + 2_000_000_000
        os.utime(cert, ns=(later, later))
        assert await who(port) == b"bob"
        kept = creds.ssl_context()
        key.write_text("not a key")  # a rotation caught half-written: the last good certificate stays
        os.utime(key, ns=(later + 1, later + 1))
        assert creds.ssl_context() is kept
        assert "client certificate not reloaded" in caplog.text
        assert await who(port) == b"bob"


async def test_a_malformed_exec_credential_is_located_without_echoing_the_token(tmp_path: Path) -> None:
    """A plugin's output cut short after the token: the error says where the JSON breaks, not what it holds."""
    secret = "SECRET-exec-token-9b2e"
    out = '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",\n "status": {"token": "%s"'
    (tmp_path / "cut.py").write_text(f"print({out % secret!r})\n")
    ex = ExecConfig(sys.executable, "client.authentication.k8s.io/v1", (str(tmp_path / "cut.py"),))
    with pytest.raises(CredentialError) as err:
        await Credentials("eks-user", exec_config=ex).refresh()
    assert secret not in str(err.value)
    assert "output is not an ExecCredential" in str(err.value) and "at line 3, column 1" in str(err.value)
