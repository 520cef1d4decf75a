"""Authentication against the real kube-apiserver: an exec credential plugin whose token the server accepts
(--token-auth-file), `--context`, a plugin that fails or a token that is refused at startup, and rotation
without restart: ServiceAccount tokens bound to Secrets, revoked by deleting the Secret (401 → the plugin
runs again), and a short expirationTimestamp (the plugin runs again before the next request)."""

from __future__ import annotations

import contextlib
import json
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubesched.cluster.kubeclient import APIError, KubeClient, from_kubeconfig
from kubesched.testing.controlplane import TOKEN_ADMIN, ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import until, wait_until

pytestmark = pytest.mark.controlplane

# Prints the token of the file given; with a second argument N, an expirationTimestamp N seconds ahead.
PLUGIN = """
import datetime, json, os, sys
with open(sys.argv[1] + ".runs", "a") as f:
    f.write(os.environ["KUBERNETES_EXEC_INFO"] + "\\n")
if not os.path.exists(sys.argv[1]):
    sys.exit("no token: run the login first")
status = {"token": open(sys.argv[1]).read().strip()}
if len(sys.argv) > 2:
    at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=float(sys.argv[2]))
    status["expirationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
"""


def exec_kubeconfig(cp: ControlPlane, tmp_path: Path, token: str, *extra: str, bad_current: bool = False) -> Path:
    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "token").write_text(token)
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(tmp_path / "plugin.py"), str(tmp_path / "token"), *extra],
            "interactiveMode": "Never",
        }
    }
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "refused" if bad_current else "exec",
        "clusters": [{"name": "k", "cluster": {"server": cp.url, "certificate-authority": str(cp.ca_file)}}],
        "users": [{"name": "plugin-user", "user": exec_user}, {"name": "stale", "user": {"token": "not-a-token"}}],
        "contexts": [
            {"name": "exec", "context": {"cluster": "k", "user": "plugin-user"}},
            {"name": "refused", "context": {"cluster": "k", "user": "stale"}},
        ],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def plugin_runs(tmp_path: Path) -> int:
    runs = tmp_path / "token.runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


async def test_an_exec_plugin_token_lists_nodes(control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = control_plane
    client = KubeClient(from_kubeconfig(exec_kubeconfig(cp, tmp_path, cp.admin_token)))
    try:
        assert await client.authenticate() == TOKEN_ADMIN
        nodes = json.loads(await client.request("GET", "/api/v1/nodes"))
        assert nodes["kind"] == "NodeList"
        lines = [line async for line in client.stream_lines("/api/v1/nodes", {"watch": "1", "timeoutSeconds": "1"})]
        assert all(json.loads(line)["type"] in ("ADDED", "BOOKMARK") for line in lines)
        assert plugin_runs(tmp_path) == 1  # cached: no expiry, no 401
    finally:
        await client.aclose()


def serve_cmd(kubeconfig: Path, *args: str) -> list[str]:
    cmd = [sys.executable, "-m", "kubesched", "extender", "serve", "--policy", "custom-label"]
    return [*cmd, "--kubeconfig", str(kubeconfig), "--log-format", "text", *args]


def serve(kubeconfig: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(serve_cmd(kubeconfig, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_extender_serve_context_and_early_authentication_errors(control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = control_plane
    path = exec_kubeconfig(cp, tmp_path, cp.admin_token, bad_current=True)
    # The current context's token is refused: the command stops at once, saying so.
    out = subprocess.run(serve_cmd(path), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "authentication failed" in out.stderr and "'stale'" in out.stderr and "Traceback" not in out.stderr
    # A failing plugin: its message, the user and the command.
    (tmp_path / "token").unlink()
    out = subprocess.run(serve_cmd(path, "--context", "exec"), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert (
        "user 'plugin-user': exec plugin" in out.stderr and "exit status 1: no token: run the login first" in out.stderr
    )
    assert "Traceback" not in out.stderr
    # --context selects the plugin's user: the extender follows the cluster.
    (tmp_path / "token").write_text(cp.admin_token)
    port = free_port()
    proc = serve(path, "--context", "exec", "--listen", f"127.0.0.1:{port}")
    try:

        def alive() -> None:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""

        def ready() -> bool:
            with contextlib.suppress(httpx.HTTPError):
                return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
            return False

        wait_until(ready, "the extender ready", within=30, alive=alive)
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0]
    assert f"as {TOKEN_ADMIN}" in output


def bound_token(cp: ControlPlane, ns: str, secret: str, seconds: int = 3600) -> str:
    uid = cp.api("POST", f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": secret}})["metadata"]["uid"]
    ref = {"kind": "Secret", "apiVersion": "v1", "name": secret, "uid": uid}
    review = {"spec": {"expirationSeconds": seconds, "boundObjectRef": ref}}
    return str(cp.api("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/rotator/token", review)["status"]["token"])


def accepted(cp: ControlPlane, token: str) -> bool:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(verify=ssl.create_default_context(cafile=cp.ca_file)) as raw:
        return raw.get(f"{cp.url}/version", headers=headers).status_code != 401


async def test_rotated_and_revoked_tokens_are_replaced_without_restart(
    control_plane: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    cp, ns = control_plane, kube_namespace
    cp.api("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "rotator"}})
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
    cp.api(
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        {"metadata": {"name": "pods"}, "rules": rules},
    )
    binding: dict[str, Any] = {
        "metadata": {"name": "rotator-pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
        "subjects": [{"kind": "ServiceAccount", "name": "rotator", "namespace": ns}],
    }
    cp.api("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", binding)
    pods = f"/api/v1/namespaces/{ns}/pods"
    first = bound_token(cp, ns, "one")
    client = KubeClient(from_kubeconfig(exec_kubeconfig(cp, tmp_path, first)))
    try:
        assert await client.authenticate() == f"system:serviceaccount:{ns}:rotator"
        await client.request("GET", pods)
        assert plugin_runs(tmp_path) == 1

        # Revoked while cached: the watch gets a 401, the plugin runs again, the watch goes on.
        (tmp_path / "token").write_text(second := bound_token(cp, ns, "two"))
        cp.api("DELETE", f"/api/v1/namespaces/{ns}/secrets/one")
        await until(lambda: not accepted(cp, first), "the first token revoked")
        lines = [line async for line in client.stream_lines(pods, {"watch": "1", "timeoutSeconds": "1"})]
        assert lines == [] and plugin_runs(tmp_path) == 2

        # Revoked again: a list (the request pool) refreshes after its 401 and succeeds.
        (tmp_path / "token").write_text(third := bound_token(cp, ns, "three"))
        cp.api("DELETE", f"/api/v1/namespaces/{ns}/secrets/two")
        await until(lambda: not accepted(cp, second), "the second token revoked")
        assert json.loads(await client.request("GET", pods))["kind"] == "PodList"
        assert plugin_runs(tmp_path) == 3

        # A refused POST refreshes the credential but is not resent: its 401 reaches the caller.
        (tmp_path / "token").write_text("unknown-token")
        cp.api("DELETE", f"/api/v1/namespaces/{ns}/secrets/three")
        await until(lambda: not accepted(cp, third), "the third token revoked")
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        with pytest.raises(APIError) as refused:
            await client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)
        assert refused.value.status == 401 and plugin_runs(tmp_path) == 4
    finally:
        await client.aclose()


async def test_an_expiring_plugin_token_is_renewed_before_use(control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = control_plane
    client = KubeClient(from_kubeconfig(exec_kubeconfig(cp, tmp_path, cp.admin_token, "2")))
    try:
        await client.request("GET", "/api/v1/nodes")
        assert plugin_runs(tmp_path) == 1
        await until(lambda: client.credentials.header() is None, "the credential expired", within=10)
        await client.request("GET", "/api/v1/nodes")  # no 401: renewed before the request
        assert plugin_runs(tmp_path) == 2
    finally:
        await client.aclose()
