"""`--kubernetes-version` and the API server's /version: which release a command follows."""

from __future__ import annotations

import argparse
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kubesched.cli import kube_version
from kubesched.cli.main import main
from kubesched.cluster.kubeclient import connect

# Only NodeResourcesBalancedAllocation scores: where the pod goes is its verdict alone.
BALANCED_ONLY = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesBalancedAllocation}]
"""
# empty: with the pod cpu 0.25, memory 0.125 -> 93, without it 100. half-mem: memory 0.5 taken: with the pod
# (0.25, 0.625) -> 81, without (0, 0.5) -> 75. v1.35 scores the balance with the pod (93 > 81: empty); v1.37 the
# change (50 + (50 + 93 - 100) // 2 = 71 < 50 + (50 + 81 - 75) // 2 = 78: half-mem).
CLUSTER = """\
apiVersion: v1
kind: List
items:
- kind: Node
  metadata: {name: empty, labels: {kubernetes.io/hostname: empty}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- kind: Node
  metadata: {name: half-mem, labels: {kubernetes.io/hostname: half-mem}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- kind: Pod
  metadata: {name: running, namespace: default}
  spec:
    nodeName: half-mem
    containers: [{name: c, image: busybox, resources: {requests: {cpu: "0", memory: 4Gi}}}]
- kind: Pod
  metadata: {name: pending, namespace: default}
  spec:
    containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def placed(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    (tmp_path / "config.yaml").write_text(BALANCED_ONLY)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    argv = ["scheduler", "run", "--cluster", str(tmp_path / "cluster.yaml"), "--config", str(tmp_path / "config.yaml")]
    assert main([*argv, "-o", "json", *flags]) == 0
    (placement,) = json.loads(capsys.readouterr().out)["placements"]
    node: str = placement["node"]
    return node


@pytest.mark.parametrize(
    ("flags", "node"),
    [
        (("--kubernetes-version", "1.35"), "empty"),
        (("--kubernetes-version", "v1.35.4"), "empty"),
        (("--kubernetes-version", "1.37.2"), "half-mem"),
        ((), "half-mem"),  # the reference
    ],
)
def test_the_scheduler_follows_the_selected_release(
    flags: tuple[str, ...], node: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert placed(tmp_path, capsys, *flags) == node


@pytest.mark.parametrize(
    "argv",
    [
        ["scheduler", "run", "--cluster", "examples/cluster.yaml"],
        ["manifests", "extender"],
        ["extender", "serve", "--policy", "custom-label", "--nodes", "examples/nodes.yaml"],
        ["dev-cluster", "up"],
        ["dev-cluster", "build"],
    ],
    ids=["scheduler-run", "manifests", "extender-serve", "dev-cluster-up", "dev-cluster-build"],
)
@pytest.mark.parametrize("version", ["1.36", "1.35.3", "v2", "latest"])
def test_an_unsupported_version_is_a_clear_cli_error(
    argv: list[str], version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--kubernetes-version", version]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kubesched: error: --kubernetes-version: unsupported Kubernetes version {version!r}")
    assert "supported are 1.35 (v1.35.4), 1.37 (v1.37.2)" in err


class _Version(BaseHTTPRequestHandler):
    answer: bytes = b""
    status = 200
    asked = 0

    def do_GET(self) -> None:
        type(self).asked += 1
        self.send_response(self.status if self.path == "/version" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[tuple[type[_Version], Path]]:
    handler = type("Handler", (_Version,), {"asked": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{server.server_address[1]}"}}}}]\n'
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    yield handler, kubeconfig
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize(
    ("answer", "status", "version", "warning"),
    [
        ({"major": "1", "minor": "35", "gitVersion": "v1.35.4"}, 200, "1.35.4", None),
        ({"major": "1", "minor": "37", "gitVersion": "v1.37.2"}, 200, "1.37.2", None),
        ({"major": "1", "minor": "36"}, 200, "1.37.2", "Kubernetes 1.36, not a supported release"),
        ({"major": "1", "minor": "33"}, 200, "1.35.4", "following the nearest, v1.35.4"),
        ({"kind": "Status"}, 403, "1.37.2", "cannot read the API server's /version"),
        ("not json", 200, "1.37.2", "cannot read the API server's /version"),
    ],
    ids=["v1.35", "v1.37", "v1.36-nearest", "v1.33-nearest", "forbidden", "garbage"],
)
def test_without_the_flag_the_server_version_is_followed(
    api_server: tuple[type[_Version], Path],
    answer: object,
    status: int,
    version: str,
    warning: str | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler, kubeconfig = api_server
    handler.answer = (answer if isinstance(answer, str) else json.dumps(answer)).encode()
    handler.status = status
    with caplog.at_level(logging.INFO, "kubesched"):
        got = kube_version.for_connection(argparse.Namespace(kubernetes_version=None), connect(str(kubeconfig)))
    assert got.version == version
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if warning is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warning in warnings[0]


def test_the_flag_wins_and_the_server_is_not_asked(api_server: tuple[type[_Version], Path]) -> None:
    handler, kubeconfig = api_server
    handler.answer = b'{"major": "1", "minor": "37"}'
    got = kube_version.for_connection(argparse.Namespace(kubernetes_version="1.35"), connect(str(kubeconfig)))
    assert got.version == "1.35.4" and handler.asked == 0


def test_an_unreachable_server_means_the_reference_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]\n'
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    got = kube_version.for_connection(argparse.Namespace(kubernetes_version=None), connect(str(kubeconfig)))
    assert got.version == "1.37.2"
    assert any("following the reference v1.37.2" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("flags", "image"),
    [
        ((), "registry.k8s.io/kube-scheduler:v1.37.2"),
        (("--kubernetes-version", "1.35"), "registry.k8s.io/kube-scheduler:v1.35.4"),
        (("--kubernetes-version", "v1.37.2"), "registry.k8s.io/kube-scheduler:v1.37.2"),
        (("--kubernetes-version", "1.35", "--kube-scheduler-image", "reg.example/ks:v9"), "reg.example/ks:v9"),
    ],
)
def test_the_manifests_kube_scheduler_image_follows_the_release(
    flags: tuple[str, ...], image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", "extender", *flags]) == 0
    out = capsys.readouterr().out
    images = {line.split("image:", 1)[1].strip() for line in out.splitlines() if "image:" in line}
    assert image in images
    assert not any("kube-scheduler:" in i and i != image for i in images)


# "declares" is the smaller node: only NodeDeclaredFeatures sends the first pod there; no node declares what the
# second needs.
FEATURES_CLUSTER = """\
apiVersion: v1
kind: List
items:
- kind: Node
  metadata: {name: lacking, labels: {kubernetes.io/hostname: lacking}}
  status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
- kind: Node
  metadata: {name: declares, labels: {kubernetes.io/hostname: declares}}
  status:
    allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
    declaredFeatures: [RestartAllContainersOnContainerExits]
- kind: Pod
  metadata: {name: restarts-all, namespace: default}
  spec:
    containers:
    - name: c
      image: busybox
      resources: {requests: {cpu: 500m, memory: 512Mi}}
      restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: In, values: [42]}}]
- kind: Pod
  metadata: {name: userns-hostnet, namespace: default}
  spec:
    hostNetwork: true
    hostUsers: false
    containers: [{name: c, image: busybox}]
"""
NO_FEATURE = (
    "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ((), {"default/restarts-all": ("declares", None), "default/userns-hostnet": (None, NO_FEATURE)}),
        (
            ("--kubernetes-version", "1.35"),  # the gate is off: the plugin is not in the default profile
            {"default/restarts-all": ("lacking", None), "default/userns-hostnet": ("declares", None)},
        ),
    ],
)
def test_node_declared_features_per_release(
    flags: tuple[str, ...],
    expected: dict[str, tuple[str | None, str | None]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "cluster.yaml").write_text(FEATURES_CLUSTER)
    assert main(["scheduler", "run", "--cluster", str(tmp_path / "cluster.yaml"), "-o", "json", *flags]) == 0
    got = {p["pod"]: (p["node"], p["reason"]) for p in json.loads(capsys.readouterr().out)["placements"]}
    assert got == expected


@pytest.mark.parametrize(
    ("item", "where"),
    [
        ("{kind: Node, metadata: {name: n}, status: {declaredFeatures: 5}}", "$.status.declaredFeatures"),
        (
            "{kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, volumeMounts: [{bindMountOptions: ro}]}]}}",
            "$.spec.containers[0].volumeMounts[0].bindMountOptions",
        ),
        (
            "{kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, restartPolicyRules: {action: x}}]}}",
            "$.spec.containers[0].restartPolicyRules",
        ),
        ("{kind: Pod, metadata: {name: p}, spec: {hostUsers: maybe, containers: [{name: c}]}}", "$.spec.hostUsers"),
    ],
)
def test_malformed_feature_fields_are_a_clear_error(
    item: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cluster.yaml").write_text(f"- {item}\n")
    assert main(["scheduler", "run", "--cluster", str(tmp_path / "cluster.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"at `{where}`" in err and "Traceback" not in err
