"""One pod-aware policy (examples/one_pod_per_job.py: at most one pod of a Job per node) in all three modes, with
the same placements: the extender behind the real kube-scheduler, both as `kubesched manifests extender --bind
--generate-certs` renders them (the extender's args and RBAC, kube-scheduler's config: HTTPS with its client
certificate), `kubesched scheduler run` live on the real kube-apiserver, and `scheduler run --cluster` in memory.

Each mode gets three nodes of its own (12, 8 and 4 cpu; memory in proportion) and a Job with one pod already running
on the biggest. The default scores put the next pod on the 8-cpu node, and the one after it on the 12-cpu node,
unless the rule holds: then on the 4-cpu node, and the fourth stays pending with the rule's reason. An extender
that does not watch pods misses the running pod and puts the third one on the 12-cpu node (checked with
`--watch-pods no`, which the renderer warns about).

The binding extender's authentication on the same deployment: a request without a client certificate is refused,
and a bind for a pod of another schedulerName is answered with an error; the pods above bind through it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubesched.cli import manifests_cmd
from kubesched.cli.main import build_parser
from kubesched.cluster.kubeclient import APIError
from kubesched.deploy import extender, render
from kubesched.testing.builders import pod_manifest
from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.process import free_port
from kubesched.testing.waiting import wait_until

pytestmark = pytest.mark.controlplane

Obj = dict[str, Any]
RUN = uuid.uuid4().hex[:6]
NS = f"kspa-{RUN}"  # the manifests' namespace (its ServiceAccounts' names are certificate CNs: keep it short)
POLICY = Path(__file__).resolve().parents[2] / "examples" / "one_pod_per_job.py"
JOB_LABEL = "batch.kubernetes.io/job-name"
SIZES = {"big": 12, "mid": 8, "small": 4}  # cpu; 4Gi of memory per cpu, so BalancedAllocation ties
WANTED = {"train-1": "mid", "train-2": "small", "train-3": None}
REASON = "node(s) already run a pod of job train"
RBAC = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def _node_names(mode: str) -> dict[str, str]:
    return {size: f"pa-{mode}-{size}-{RUN}" for size in SIZES}


def _pod(name: str, mode: str, scheduler: str, node: str | None = None) -> Obj:
    spec: Obj = {"nodeSelector": {"kubesched.io/pod-aware": f"{mode}-{RUN}"}}
    if node:
        spec["nodeName"] = node
    return pod_manifest(
        name,
        scheduler=scheduler,
        labels={JOB_LABEL: "train"},
        requests={"cpu": "2", "memory": "8Gi"},
        **spec,
    )


@contextlib.contextmanager
def _nodes(cp: ControlPlane, mode: str) -> Iterator[dict[str, str]]:
    names = _node_names(mode)
    for size, name in names.items():
        cpu = SIZES[size]
        allocatable = {"cpu": str(cpu), "memory": f"{4 * cpu}Gi", "pods": "110"}
        cp.create_node(name, labels={"kubesched.io/pod-aware": f"{mode}-{RUN}"}, allocatable=allocatable)
    try:
        yield names
    finally:
        for name in names.values():
            with contextlib.suppress(APIError):
                cp.delete_node(name)


def _unschedulable(cp: ControlPlane, ns: str, name: str) -> str:
    def message() -> str | None:
        pod = cp.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        for cond in pod.get("status", {}).get("conditions") or []:
            if cond["type"] == "PodScheduled" and cond["status"] == "False" and cond.get("reason") == "Unschedulable":
                return str(cond["message"])
        return None

    found = wait_until(message, f"{ns}/{name} to be reported unschedulable", within=60, interval=0.2)
    assert found is not None
    return found


def _seed(cp: ControlPlane, ns: str, mode: str, scheduler: str) -> None:
    """The Job's pod already running on the biggest node (bound by someone else)."""
    cp.api("POST", f"/api/v1/namespaces/{ns}/pods", _pod(f"{mode}-train-0", mode, scheduler, _node_names(mode)["big"]))


def _run_live(cp: ControlPlane, ns: str, mode: str, scheduler: str) -> dict[str, str | None]:
    """The Job's next pods, created one at a time; where each went (None: pending)."""
    names = _node_names(mode)
    placed: dict[str, str | None] = {}
    by_node = {v: k for k, v in names.items()}
    for pod, want in WANTED.items():
        name = f"{mode}-{pod}"  # one namespace for all modes
        cp.api("POST", f"/api/v1/namespaces/{ns}/pods", _pod(name, mode, scheduler))
        if want is None:
            assert REASON in _unschedulable(cp, ns, name)
            placed[pod] = None
        else:
            placed[pod] = by_node[cp.wait_pod_bound(ns, name)]
            if placed[pod] != want:
                break  # a wrong placement: the next pods would only repeat it
    return placed


class Process:
    """A kubesched command as a child process, its output in a log file."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "kubesched", *argv], stdout=out, stderr=out)

    def alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"exited {self.proc.returncode}:\n{self.log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


# ---- the extender behind kube-scheduler, as `kubesched manifests` renders them -------------------------------------


class Deployed:
    """The rendered extender objects: RBAC applied for real in NS, Secrets' files and args for local processes."""

    def __init__(self, cp: ControlPlane, tmp: Path, watch_pods: str, created: list[str]) -> None:
        self.cp, self.tmp, self.created = cp, tmp, created
        self.scheduler_name = f"pa-ext-{RUN}"
        argv = ["manifests", "extender", "--namespace", NS, "--policy", str(POLICY), "--load-plugins", "--bind"]
        argv += ["--generate-certs", "--scheduler-name", self.scheduler_name, "--watch-pods", watch_pods]
        self.objects = render.render(manifests_cmd.build_plan(build_parser().parse_args(argv)))
        self.port = free_port()
        self.certs = {name: self._secret(name) for name in (extender.TLS_SECRET, extender.CLIENT_SECRET)}

    def _find(self, kind: str, name: str) -> Obj:
        (obj,) = [o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name]
        return obj

    def _secret(self, name: str) -> dict[str, Path]:
        directory = self.tmp / name
        directory.mkdir(exist_ok=True)
        out = {}
        for key, value in self._find("Secret", name)["data"].items():
            out[key] = directory / key
            out[key].write_bytes(base64.b64decode(value))
        return out

    def apply_rbac(self) -> None:
        for obj in self.objects:
            if obj["kind"] in RBAC:
                path = _collection(obj)
                with contextlib.suppress(APIError):
                    self.cp.api("DELETE", f"{path}/{obj['metadata']['name']}")
                self.cp.api("POST", path, obj)
                if f"{path}/{obj['metadata']['name']}" not in self.created:
                    self.created.append(f"{path}/{obj['metadata']['name']}")

    def extender_argv(self) -> list[str]:
        """The rendered container args, with the paths and identity of this machine instead of the pod's."""
        args = self._find("Deployment", extender.EXTENDER)["spec"]["template"]["spec"]["containers"][0]["args"]
        tls = self.certs[extender.TLS_SECRET]
        local = {
            f"{extender.POLICY_DIR}/{POLICY.name}": str(POLICY),
            f"{extender.TLS_DIR}/tls.crt": str(tls["tls.crt"]),
            f"{extender.TLS_DIR}/tls.key": str(tls["tls.key"]),
            f"{extender.TLS_DIR}/ca.crt": str(tls["ca.crt"]),
            f"0.0.0.0:{extender.PORT}": f"127.0.0.1:{self.port}",
            "json": "text",
        }
        user = f"system:serviceaccount:{NS}:{extender.EXTENDER}"
        kubeconfig = self.cp.kubeconfig(user, ["system:serviceaccounts", f"system:serviceaccounts:{NS}"])
        out = [local.get(a, a) for a in args]
        out[out.index("--in-cluster")] = "--kubeconfig"
        out.insert(out.index("--kubeconfig") + 1, str(kubeconfig))
        return out

    def scheduler_config(self) -> Obj:
        """The rendered KubeSchedulerConfiguration; the URL is this machine's, the name checked the Service's."""
        config: Obj = yaml.safe_load(self._find("ConfigMap", extender.SCHEDULER)["data"]["config.yaml"])
        (ext,) = config["extenders"]
        assert ext["urlPrefix"] == f"https://{extender.dns_name(NS)}:{extender.PORT}" and ext["enableHTTPS"]
        ext["urlPrefix"] = f"https://127.0.0.1:{self.port}"
        client = self.certs[extender.CLIENT_SECRET]
        tls = ext["tlsConfig"]
        for field in ("certFile", "keyFile", "caFile"):
            tls[field] = str(client[Path(tls[field]).name])
        tls["serverName"] = extender.dns_name(NS)
        return config

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def client(self, with_cert: bool) -> httpx.Client:
        tls = self.certs[extender.CLIENT_SECRET]
        ctx = ssl.create_default_context(cafile=str(tls["ca.crt"]))
        ctx.check_hostname = False  # the certificate names the Service; the address here is 127.0.0.1
        if with_cert:
            ctx.load_cert_chain(tls["tls.crt"], tls["tls.key"])
        return httpx.Client(verify=ctx, timeout=10)


def _collection(obj: Obj) -> str:
    kind = obj["kind"]
    plural = {"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "Role": "roles"}
    plural |= {"ClusterRoleBinding": "clusterrolebindings", "RoleBinding": "rolebindings"}
    base = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    namespace = obj["metadata"].get("namespace")
    return f"{base}/namespaces/{namespace}/{plural[kind]}" if namespace else f"{base}/{plural[kind]}"


@pytest.fixture(scope="module")
def created(control_plane: ControlPlane) -> Iterator[list[str]]:
    """The namespace NS; what is created outside it (cluster roles, bindings) is listed and deleted at the end."""
    control_plane.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    paths: list[str] = []
    try:
        yield paths
    finally:
        for path in reversed(paths):
            if f"/namespaces/{NS}/" not in path:
                with contextlib.suppress(APIError):
                    control_plane.api("DELETE", path)
        control_plane.delete_namespace(NS)


@contextlib.contextmanager
def _extender_mode(cp: ControlPlane, tmp: Path, watch_pods: str, mode: str, created: list[str]) -> Iterator[Deployed]:
    deployed = Deployed(cp, tmp, watch_pods, created)
    deployed.apply_rbac()
    ext = Process(deployed.extender_argv(), tmp / f"extender-{mode}.log")
    sched = None
    try:
        with deployed.client(with_cert=False) as anonymous:

            def ready() -> bool:
                ext.alive()
                with contextlib.suppress(httpx.HTTPError):
                    return anonymous.get(f"{deployed.url}/readyz").status_code == 200
                return False

            wait_until(ready, "the extender to be ready", within=60, interval=0.2)
        user = f"system:serviceaccount:{NS}:{extender.SCHEDULER}"
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{NS}"]
        sched = cp.start_scheduler(deployed.scheduler_config(), name=f"pa-{mode}-{RUN}", identity=user, groups=groups)
        yield deployed
    finally:
        if sched is not None:
            sched.stop()
        ext.stop()
        with contextlib.suppress(APIError):  # the next test's kube-scheduler takes it at once
            cp.api("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{extender.SCHEDULER}")


@pytest.mark.all_kubernetes_versions  # kube-scheduler v1.35.4 and v1.37.2 both call it over HTTPS
def test_the_extender_as_deployed_the_live_scheduler_and_the_dry_run_place_alike(
    control_plane: ControlPlane, created: list[str], tmp_path: Path
) -> None:
    namespace = NS
    placements: dict[str, dict[str, str | None]] = {}
    # 1. The extender behind kube-scheduler, as rendered (HTTPS, client certificate, --watch-pods auto). The
    # running pod is there before the extender starts: its first list has it (no race with the watch).
    with contextlib.ExitStack() as stack:
        stack.enter_context(_nodes(control_plane, "ext"))
        _seed(control_plane, namespace, "ext", f"pa-ext-{RUN}")
        deployed = stack.enter_context(_extender_mode(control_plane, tmp_path, "auto", "ext", created))
        assert deployed.scheduler_name == f"pa-ext-{RUN}"
        placements["extender"] = _run_live(control_plane, namespace, "ext", deployed.scheduler_name)
        log = (tmp_path / "extender-ext.log").read_text()
        assert "(pods: True)" in log and f"binding only pods of scheduler {deployed.scheduler_name}" in log
        with deployed.client(with_cert=False) as anonymous:
            metrics = anonymous.get(f"{deployed.url}/metrics").text
        bound = [line for line in metrics.splitlines() if line.startswith("kubesched_extender_requests_total")]
        assert any('verb="bind"' in line and 'code="200"' in line and line.endswith(" 2.0") for line in bound), bound

    # 2. `kubesched scheduler run` live, the plugin loaded from the same file.
    live = f"pa-live-{RUN}"
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "pluginModules": [f"{POLICY}:OnePodPerJob"],
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": live, "plugins": {"filter": {"enabled": [{"name": "OnePodPerJob"}]}}}],
    }
    (tmp_path / "live.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    argv = ["scheduler", "run", "--config", str(tmp_path / "live.yaml"), "--kubeconfig"]
    argv += [str(control_plane.admin_kubeconfig), "--listen", f"127.0.0.1:{port}", "--log-format", "text"]
    with _nodes(control_plane, "live"):
        proc = Process(argv, tmp_path / "live.log")
        try:

            def ready() -> bool:
                proc.alive()
                with contextlib.suppress(httpx.HTTPError):
                    return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
                return False

            wait_until(ready, "the scheduler to be ready", within=60, interval=0.2)
            _seed(control_plane, namespace, "live", live)  # one watch: seen before the pods created after it
            placements["scheduler"] = _run_live(control_plane, namespace, "live", live)
        finally:
            proc.stop()

    # 3. `scheduler run --cluster`: the same nodes and pods, in memory (the pending pods in creation order).
    names = _node_names("mem")
    items: list[Obj] = []
    for size, name in names.items():
        cpu = SIZES[size]
        status = {"allocatable": {"cpu": str(cpu), "memory": f"{4 * cpu}Gi", "pods": "110"}}
        items.append({"kind": "Node", "metadata": {"name": name, "labels": {"kubesched.io/pod-aware": f"mem-{RUN}"}}})
        items[-1]["status"] = status
    pods = [_pod("train-0", "mem", live, names["big"])] + [_pod(p, "mem", live) for p in WANTED]
    for i, p in enumerate(pods):
        p["metadata"] |= {"namespace": namespace, "creationTimestamp": f"2026-01-01T00:00:0{i}Z"}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(items + pods))
    out = subprocess.run(
        [sys.executable, "-m", "kubesched", *argv[:4], "--cluster", str(tmp_path / "cluster.yaml"), "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    by_node = {v: k for k, v in names.items()}
    result = json.loads(out.stdout)["placements"]
    placements["dry run"] = {p["pod"].split("/")[1]: by_node.get(p["node"]) for p in result}
    assert REASON in next(p for p in result if p["pod"].endswith("/train-3"))["reason"]

    assert placements == {"extender": WANTED, "scheduler": WANTED, "dry run": WANTED}


def test_an_extender_not_watching_pods_is_blind_and_the_renderer_says_so(
    control_plane: ControlPlane, created: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the same deployment with --watch-pods no misses the running pod (so the test above can fail)."""
    namespace = NS
    with _nodes(control_plane, "blind"), _extender_mode(control_plane, tmp_path, "no", "blind", created) as deployed:
        assert "--watch-pods no: policy one-pod-per-job: plugin(s) OnePodPerJob may read" in capsys.readouterr().err
        cp = control_plane
        names = _node_names("blind")
        cp.api(
            "POST", f"/api/v1/namespaces/{namespace}/pods", _pod("b-0", "blind", deployed.scheduler_name, names["big"])
        )
        placed = []
        for pod in ("b-1", "b-2"):
            cp.api("POST", f"/api/v1/namespaces/{namespace}/pods", _pod(pod, "blind", deployed.scheduler_name))
            placed.append(cp.wait_pod_bound(namespace, pod))
        assert placed == [names["mid"], names["big"]]  # b-2 beside b-0, against the rule


@pytest.mark.all_kubernetes_versions
def test_the_binding_extender_refuses_clients_without_a_certificate_and_other_schedulers_pods(
    control_plane: ControlPlane, created: list[str], tmp_path: Path
) -> None:
    namespace = NS
    with _nodes(control_plane, "auth"), _extender_mode(control_plane, tmp_path, "auto", "auth", created) as deployed:
        node = _node_names("auth")["mid"]
        other = _pod("other", "auth", f"nobody-{RUN}")  # no scheduler of that name runs
        stored = control_plane.api("POST", f"/api/v1/namespaces/{namespace}/pods", other)
        args = {"PodName": "other", "PodNamespace": namespace, "PodUID": stored["metadata"]["uid"], "Node": node}
        with deployed.client(with_cert=False) as anonymous:
            refused = anonymous.post(f"{deployed.url}/bind", json=args)
            assert refused.status_code == 401, refused.text
            assert "needs a client certificate" in refused.text
            assert anonymous.get(f"{deployed.url}/healthz").status_code == 200  # kubelet's probes need none
        with deployed.client(with_cert=True) as scheduler:
            answer = scheduler.post(f"{deployed.url}/bind", json=args)
        assert answer.status_code == 200
        error = answer.json()["Error"]
        assert f"its spec.schedulerName is 'nobody-{RUN}'" in error
        assert f"binds only pods of '{deployed.scheduler_name}'" in error
        pod = control_plane.api("GET", f"/api/v1/namespaces/{namespace}/pods/other")
        assert not pod["spec"].get("nodeName")
        # Its own pods it binds, called by kube-scheduler with the client certificate of the rendered config.
        control_plane.api("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("mine", "auth", deployed.scheduler_name))
        assert control_plane.wait_pod_bound(namespace, "mine") in _node_names("auth").values()
