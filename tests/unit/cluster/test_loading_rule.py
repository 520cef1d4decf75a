"""The one loading rule (kubectl's and kube-scheduler's habits): --kubeconfig, else $KUBECONFIG (merged), else
in-cluster in a pod, else ~/.kube/config, else an error that says what to pass; an exec plugin's relative command
resolved from the kubeconfig's directory, as client-go does."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched import pki
from kubesched.cluster.kubeconfig import KubeConfigError, connect


def kubeconfig(path: Path, server: str, *, current: str | None = "main", user: dict[str, Any] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def pod(tmp_path: Path) -> Path:
    """A service account directory as a pod has it mounted."""
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "ca.crt").write_bytes(pki.new_ca("test-ca").cert_pem)
    (sa / "token").write_text("sa-token")
    return sa


IN_POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_precedence_flag_then_kubeconfig_env_then_in_cluster_then_home(tmp_path: Path, pod: Path) -> None:
    home = tmp_path / "home"
    kubeconfig(home / ".kube" / "config", "https://home:6443")
    from_env = kubeconfig(tmp_path / "env.kubeconfig", "https://env:6443")
    flag = kubeconfig(tmp_path / "flag.kubeconfig", "https://flag:6443")
    env = {"HOME": str(home), "KUBECONFIG": str(from_env), **IN_POD}

    assert connect(str(flag), env=env, service_account=pod).server == "https://flag:6443"
    assert connect(None, env=env, service_account=pod).server == "https://env:6443"
    no_env = {k: v for k, v in env.items() if k != "KUBECONFIG"}
    conn = connect(None, env=no_env, service_account=pod)
    assert (conn.server, conn.source) == ("https://10.96.0.1:443", "in-cluster")
    assert conn.credentials is not None and conn.credentials.header() == "Bearer sa-token"
    # Not in a pod (no service host, or no token mounted): kubectl's default file.
    assert connect(None, env={"HOME": str(home)}, service_account=pod).server == "https://home:6443"
    (pod / "token").unlink()
    conn = connect(None, env=no_env, service_account=pod)
    assert (conn.server, conn.source) == ("https://home:6443", str(home / ".kube" / "config"))


def test_a_context_is_a_kubeconfig_s_so_it_skips_in_cluster(tmp_path: Path, pod: Path) -> None:
    home = tmp_path / "home"
    path = kubeconfig(home / ".kube" / "config", "https://home:6443")
    doc = yaml.safe_load(path.read_text())
    doc["contexts"].append({"name": "other", "context": {"cluster": "c2", "user": "u"}})
    doc["clusters"].append({"name": "c2", "cluster": {"server": "https://other:6443"}})
    path.write_text(yaml.safe_dump(doc))
    env = {"HOME": str(home), **IN_POD}
    assert connect(None, "other", env=env, service_account=pod).server == "https://other:6443"
    assert connect(None, env=env, service_account=pod).source == "in-cluster"


def test_kubeconfig_env_merges_several_files_as_client_go(tmp_path: Path) -> None:
    # The first file to set current-context sets it; the first file to define a name wins; missing files skipped.
    first = kubeconfig(tmp_path / "a", "https://first", current=None)
    second = kubeconfig(tmp_path / "b", "https://second", current="main")
    doc = yaml.safe_load(second.read_text())
    doc["current-context"] = "extra"
    doc["contexts"].append({"name": "extra", "context": {"cluster": "x", "user": "u"}})
    doc["clusters"].append({"name": "x", "cluster": {"server": "https://x"}})
    second.write_text(yaml.safe_dump(doc))
    third = kubeconfig(tmp_path / "c", "https://third", current="main")
    env = {
        "HOME": str(tmp_path / "nohome"),
        "KUBECONFIG": os.pathsep.join([str(first), "/gone", str(second), str(third)]),
    }
    conn = connect(None, env=env)
    assert conn.server == "https://x"  # current-context "extra": from the second file, the first to set one
    assert connect(None, "main", env=env).server == "https://first"  # cluster "c" of the first file
    assert conn.source == os.pathsep.join([str(first), str(second), str(third)])


def test_no_cluster_says_exactly_what_to_pass(tmp_path: Path, pod: Path) -> None:
    home = tmp_path / "home"
    with pytest.raises(KubeConfigError) as err:
        connect(None, env={"HOME": str(home)}, service_account=pod)
    message = str(err.value)
    assert message == (
        "no cluster to talk to: give --kubeconfig FILE, set KUBECONFIG=FILE, run in a pod with a service account,"
        f" or create {home / '.kube' / 'config'}"
    )
    (pod / "token").unlink()
    with pytest.raises(KubeConfigError, match=r"KUBERNETES_SERVICE_HOST is set, but .*token is not there"):
        connect(None, env={"HOME": str(home), **IN_POD}, service_account=pod)
    with pytest.raises(KubeConfigError, match=r"KUBECONFIG: none of /gone/a, /gone/b exists"):
        connect(None, env={"HOME": str(home), "KUBECONFIG": os.pathsep.join(["/gone/a", "/gone/b"])})
    with pytest.raises(KubeConfigError, match=r"cannot read"):
        connect(str(tmp_path / "missing"), env={"HOME": str(home)})


def test_a_broken_home_kubeconfig_is_reported_not_skipped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("clusters: {")
    with pytest.raises(KubeConfigError, match=r"\.kube/config: not valid YAML"):
        connect(None, env={"HOME": str(home)})


EXEC_PLUGIN = """#!{python}
import json
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {{"token": "from-relative-plugin"}}}}))
"""


async def test_an_exec_plugin_s_relative_command_resolves_from_the_kubeconfig_s_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_dir = tmp_path / "configs"
    script = config_dir / "bin" / "get-token"
    script.parent.mkdir(parents=True)
    script.write_text(EXEC_PLUGIN.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    exec_section = {"apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never"}
    relative = kubeconfig(
        config_dir / "kc", "https://k:6443", user={"exec": {**exec_section, "command": "bin/get-token"}}
    )
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # resolved from the file's directory, never from the working directory
    conn = connect(str(relative), env={})
    creds = conn.credentials
    assert creds is not None and creds.exec is not None
    assert creds.exec.command == str(script)
    assert await creds.refresh() == "Bearer from-relative-plugin"
    # A bare name is looked up on $PATH (kept as is), an absolute path is kept.
    for command in ("aws", str(script)):
        path = kubeconfig(config_dir / "kc2", "https://k:6443", user={"exec": {**exec_section, "command": command}})
        creds = connect(str(path), env={}).credentials
        assert creds is not None and creds.exec is not None and creds.exec.command == command
    broken = kubeconfig(config_dir / "kc3", "https://k:6443", user={"exec": ["not", "a", "mapping"]})
    with pytest.raises(KubeConfigError, match=r"users\[u\]\.exec is not a mapping"):
        connect(str(broken), env={})
