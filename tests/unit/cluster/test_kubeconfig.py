"""Kubeconfig loading with client-go's rules: contexts, $KUBECONFIG merges, relative paths, tokenFile, errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster import credentials
from kubesched.cluster.kubeconfig import KubeConfigError, connect, from_kubeconfig, in_cluster, kubeconfig_paths


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def config(
    current: str | None, contexts: dict[str, tuple[str, str]], clusters: dict[str, str], users: dict[str, Any]
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, (c, u) in contexts.items()],
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in clusters.items()],
        "users": [{"name": n, "user": u} for n, u in users.items()],
    }
    if current:
        doc["current-context"] = current
    return doc


def test_the_current_context_or_the_one_given(tmp_path: Path) -> None:
    path = write(
        tmp_path / "kc",
        config(
            "a",
            {"a": ("ca", "ua"), "b": ("cb", "ub")},
            {"ca": "https://a:6443/", "cb": "http://b:8080"},
            {"ua": {"token": "ta"}, "ub": {"token": "tb"}},
        ),
    )
    conn = from_kubeconfig(path)
    assert (conn.server, conn.credentials and conn.credentials.header()) == ("https://a:6443", "Bearer ta")
    conn = from_kubeconfig(path, "b")
    assert (conn.server, conn.credentials and conn.credentials.header()) == ("http://b:8080", "Bearer tb")
    with pytest.raises(KubeConfigError, match="contexts: no entry named 'c'"):
        from_kubeconfig(path, "c")


def test_kubeconfig_paths_are_merged_first_file_wins(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "token").write_text("from-one\n")
    first = write(
        tmp_path / "one" / "kc",
        config(None, {"x": ("c", "u")}, {"c": "https://first"}, {"u": {"tokenFile": "token"}}),
    )
    second = write(
        tmp_path / "kc2",
        config(
            "x",
            {"x": ("c2", "u2"), "y": ("c", "u2")},
            {"c": "https://second", "c2": "https://c2"},
            {"u": {"token": "never"}, "u2": {"token": "t2"}},
        ),
    )
    missing = tmp_path / "nope"
    env = {"KUBECONFIG": os.pathsep.join([str(first), str(missing), "", str(second), str(first)])}
    paths = kubeconfig_paths(None, env)
    assert paths == [first, second]  # missing and empty entries skipped, duplicates once
    conn = from_kubeconfig(paths)
    # current-context from the second file (the first sets none); context x from the first file,
    # cluster c and user u from the first file: its tokenFile resolved from its own directory.
    assert conn.server == "https://first"
    assert conn.credentials is not None and conn.credentials.header() == "Bearer from-one"
    conn = from_kubeconfig(paths, "y")
    assert conn.server == "https://first" and conn.credentials and conn.credentials.header() == "Bearer t2"
    with pytest.raises(KubeConfigError, match="none of"):
        kubeconfig_paths(None, {"KUBECONFIG": str(missing)})


async def test_token_file_is_reread_each_minute_and_after_a_401(tmp_path: Path) -> None:
    now = [1000.0]
    token = tmp_path / "token"
    token.write_text("one")
    creds = credentials.Credentials("u", token_file=token, clock=lambda: now[0])
    assert creds.header() == "Bearer one"
    token.write_text("two")
    assert creds.header() == "Bearer one"  # cached for a minute
    now[0] += credentials.TOKEN_FILE_PERIOD + 1
    assert creds.header() == "Bearer two"
    token.write_text("three")
    assert await creds.refresh(rejected="Bearer two") == "Bearer three"  # a 401: read at once
    token.unlink()
    now[0] += credentials.TOKEN_FILE_PERIOD + 1
    assert creds.header() == "Bearer three"  # a vanished file keeps the token it had


def test_errors_name_the_file_and_field(tmp_path: Path) -> None:
    bad = write(tmp_path / "kc", config("a", {"a": ("c", "u")}, {"c": ""}, {"u": {}}))
    with pytest.raises(KubeConfigError, match=r"clusters\[c\].server is not set"):
        from_kubeconfig(bad)
    nofile = write(tmp_path / "kc2", config("a", {"a": ("c", "u")}, {"c": "https://x"}, {"u": {"tokenFile": "gone"}}))
    with pytest.raises(KubeConfigError, match=r"user 'u': token file .*gone"):
        from_kubeconfig(nofile)
    v1 = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "x"}}
    noninteractive = write(tmp_path / "kc3", config("a", {"a": ("c", "u")}, {"c": "https://x"}, {"u": v1}))
    with pytest.raises(KubeConfigError, match=r"users\[u\].exec.interactiveMode must be set"):
        from_kubeconfig(noninteractive)
    alpha = {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}}
    old = write(tmp_path / "kc4", config("a", {"a": ("c", "u")}, {"c": "https://x"}, {"u": alpha}))
    with pytest.raises(KubeConfigError, match="v1alpha1"):
        from_kubeconfig(old)
    (tmp_path / "list").write_text("- 1\n")
    with pytest.raises(KubeConfigError, match="not a kubeconfig"):
        from_kubeconfig(tmp_path / "list")
    with pytest.raises(KubeConfigError, match="no cluster to talk to: give --kubeconfig FILE"):
        connect(None, "x", env={"HOME": str(tmp_path / "nohome")})


def test_in_cluster_token_is_reread_when_it_rotates(tmp_path: Path) -> None:
    from kubesched import pki

    ca = pki.new_ca("test-ca")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    (tmp_path / "token").write_text("sa-1")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    conn = in_cluster(tmp_path, env)
    assert conn.server == "https://[fd00::1]:443"
    creds = conn.credentials
    assert creds is not None and creds.header() == "Bearer sa-1"
    (tmp_path / "token").write_text("sa-2")
    creds.clock = lambda: 1e12  # a minute (and more) later
    assert creds.header() == "Bearer sa-2"
    with pytest.raises(KubeConfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster(tmp_path, {})


def test_tls_server_name_and_proxy_url_are_read_and_a_socks_proxy_is_refused_by_name(tmp_path: Path) -> None:
    doc = config("a", {"a": ("c", "u")}, {"c": "https://10.0.0.1:6443"}, {"u": {"token": "t"}})
    doc["clusters"][0]["cluster"].update({"tls-server-name": "api.internal", "proxy-url": "http://proxy:3128"})
    conn = from_kubeconfig(write(tmp_path / "kc", doc))
    assert (conn.tls_server_name, conn.proxy) == ("api.internal", "http://proxy:3128")
    doc["clusters"][0]["cluster"]["proxy-url"] = "socks5://proxy:1080"
    with pytest.raises(
        KubeConfigError, match=r"clusters\[c\].proxy-url: 'socks5://proxy:1080': only http.* \(socks5 is not\)"
    ):
        from_kubeconfig(write(tmp_path / "kc", doc))


SECRET = "SECRET-token-4f1c9a0d7e"
MALFORMED = {
    # A token line followed by a line indented one space less: the parser stops right after the token.
    "bad indentation": (
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: %s\n   client-key-data: x\n",
        "line 7, column 4",
    ),
    "a tab": ("users:\n- name: admin\n  user:\n\ttoken: %s\n", "line 4, column 1"),
    "an unclosed quote": ('users:\n- name: admin\n  user:\n    token: "%s\n', "line 5, column 1"),
    "a colon in the token": ("users:\n- name: admin\n  user:\n    token: %s: more\n", "line 4, column "),
    "a tag": ("users:\n- name: admin\n  user:\n    token: !%s x\n", "line 4, column 12"),
}


@pytest.mark.parametrize("text", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_kubeconfig_is_located_without_echoing_its_secrets(tmp_path: Path, text: tuple[str, str]) -> None:
    """PyYAML's message quotes the lines around the problem (the token) and sometimes what it found (a tag): the
    error names the file, the line and the column only."""
    body, where = text
    path = tmp_path / "kubeconfig"
    path.write_text(body % SECRET)
    with pytest.raises(KubeConfigError) as err:
        from_kubeconfig(path)
    message = str(err.value)
    assert SECRET not in message and "SECRET" not in message
    assert message.startswith(f"{path}: not valid YAML: ") and where in message, message
    assert "\n" not in message


def test_a_kubeconfig_that_is_not_text_says_where(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(b"users:\n- name: a\n  user: {token: " + SECRET.encode() + b"\x00}\n")
    with pytest.raises(KubeConfigError) as err:
        from_kubeconfig(path)
    assert SECRET not in str(err.value) and "at character 57" in str(err.value)
    path.write_bytes(b"users:\n- name: a\n  user: {token: " + SECRET.encode() + b"\xff}\n")
    with pytest.raises(KubeConfigError) as err:
        from_kubeconfig(path)
    assert str(err.value) == f"{path}: not UTF-8 text (byte 57)"
