"""The cluster flags every command shares (`cli/connection.py`): what excludes what, and the error that says what to
pass, with the command's own alternative."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from kubesched.cli import connection
from kubesched.cli.main import build_parser
from kubesched.errors import CLIError


@pytest.fixture(autouse=True)
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def args(**flags: object) -> argparse.Namespace:
    return argparse.Namespace(**{"kubeconfig": None, "context": None, "in_cluster": False, **flags})


def test_in_cluster_excludes_a_kubeconfig_and_a_context() -> None:
    with pytest.raises(CLIError, match="--in-cluster and --kubeconfig exclude each other"):
        connection.connection(args(in_cluster=True, kubeconfig="k"))
    with pytest.raises(CLIError, match="--in-cluster and --context exclude each other"):
        connection.connection(args(in_cluster=True, context="c"))
    with pytest.raises(CLIError, match="not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set"):
        connection.connection(args(in_cluster=True))


def test_the_error_names_the_command_s_alternative() -> None:
    with pytest.raises(CLIError) as err:
        connection.connection(args(), otherwise="or --nodes FILE")
    assert str(err.value).startswith("no cluster to talk to: give --kubeconfig FILE, set KUBECONFIG=FILE")
    assert str(err.value).endswith("/.kube/config (or --nodes FILE)")


def test_a_kubeconfig_given_by_the_command_wins_over_the_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def kubeconfig(name: str) -> Path:
        doc = {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            "clusters": [{"name": "k", "cluster": {"server": f"https://{name}:6443"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
        }
        path = tmp_path / name
        path.write_text(yaml.safe_dump(doc))
        return path

    monkeypatch.setenv("KUBECONFIG", str(kubeconfig("env")))
    assert connection.connection(args()).server == "https://env:6443"
    # scheduler run: --config's clientConnection.kubeconfig, passed by the command, before $KUBECONFIG.
    assert connection.connection(args(), str(kubeconfig("file"))).server == "https://file:6443"
    assert connection.connection(args(kubeconfig=str(kubeconfig("flag")))).server == "https://flag:6443"


@pytest.mark.parametrize(
    "command",
    [
        ["extender", "serve", "--policy", "custom-label"],
        ["scheduler", "run"],
        ["webhook", "serve", "--config", "c.yaml"],
        ["snapshot", "-o", "c.yaml"],
        ["explain", "ns/p"],
    ],
)
def test_every_command_that_talks_to_a_cluster_has_the_same_flags(command: list[str]) -> None:
    parsed = build_parser().parse_args([*command, "--kubeconfig", "k", "--context", "c", "--in-cluster"])
    assert (parsed.kubeconfig, parsed.context, parsed.in_cluster) == ("k", "c", True)
