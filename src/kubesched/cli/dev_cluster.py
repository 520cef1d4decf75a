"""`kubesched dev-cluster up|build|status|restart-scheduler|down`: a throwaway etcd + kube-apiserver (+ kube-scheduler)
with fake nodes, and the commands that talk to a running one."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from kubesched.cli import kube_version, tables
from kubesched.cli.dev_cluster_progress import Progress
from kubesched.cluster.kubeclient import APIError
from kubesched.errors import CLIError
from kubesched.testing import build, devcluster
from kubesched.testing.controlplane import TOKEN_ADMIN, ControlPlane
from kubesched.testing.nodes_file import FileNode, NodesFileError, load_nodes_file
from kubesched.testing.process import ProcessError
from kubesched.testing.scheduler import SchedulerConfigError, load_config, minimal_config
from kubesched.versions import KUBERNETES_VERSION

PREFIX = "kubesched dev-cluster:"
SCHEDULER = "kube-scheduler"  # the name of the dev-cluster's one kube-scheduler (log file, config file)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `dev-cluster up|build|status|restart-scheduler|down`."""
    parser = subparsers.add_parser(
        "dev-cluster",
        help="run a local etcd + kube-apiserver + kube-scheduler with fake nodes",
        description="A real control plane on 127.0.0.1, built from the Go module proxy on first use.",
    )
    sub = parser.add_subparsers(dest="dev_cluster_command", required=True, metavar="ACTION")
    up = sub.add_parser(
        "up",
        help="start the cluster and stay in the foreground until Ctrl-C",
        description="Start etcd, kube-apiserver and kube-scheduler on free loopback ports, register fake nodes "
        "(--nodes N: node-0.. with 8 cpu, 32Gi, 110 pods; --nodes-file: any shape), print the admin kubeconfig, "
        "and run until SIGINT/SIGTERM.",
    )
    up.add_argument(
        "--nodes", type=int, metavar="N", help="number of plain fake nodes (default 1, 0 with --nodes-file)"
    )
    up.add_argument(
        "--nodes-file",
        type=Path,
        metavar="FILE",
        help="nodes of any shape: Node objects, a NodeList or a compact list (docs/control-plane.md)",
    )
    up.add_argument(
        "--scheduler-config",
        type=Path,
        metavar="FILE",
        help="KubeSchedulerConfiguration YAML (clientConnection.kubeconfig is filled in); default: one profile",
    )
    up.add_argument("--no-scheduler", action="store_true", help="do not run kube-scheduler")
    up.add_argument("--keep", action="store_true", help="keep the working directory (logs, kubeconfigs) on exit")
    status = sub.add_parser(
        "status",
        help="show a running dev-cluster: kubeconfig, URLs, binaries, pids",
        description="Print the state of a running dev-cluster (the one running, or --dir's).",
    )
    down = sub.add_parser(
        "down",
        help="stop a running dev-cluster (started in another terminal, in the background, or with --keep)",
        description="Stop the dev-cluster (the one running, or --dir's) as Ctrl-C in its terminal would: "
        "kube-scheduler, kube-apiserver and etcd stop; its working directory is removed unless started with --keep.",
    )
    down.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="(default 60)")
    restart = sub.add_parser(
        "restart-scheduler",
        help="restart the dev-cluster's kube-scheduler, optionally with another config",
        description="Restart kube-scheduler of a running dev-cluster (etcd and kube-apiserver keep running). "
        "kube-scheduler checks a new --config first: a config it refuses leaves the running one alone.",
    )
    restart.add_argument("--config", type=Path, metavar="FILE", help="the new KubeSchedulerConfiguration YAML")
    restart.add_argument("--timeout", type=float, default=180.0, metavar="SECONDS", help="(default 180)")
    for p in (status, restart, down):
        p.add_argument("--dir", type=Path, metavar="DIR", help="the dev-cluster's data dir (default: the one running)")
    build_cmd = sub.add_parser(
        "build",
        help="build (or verify) the cached control-plane binaries",
        description="Build etcd, kube-apiserver and kube-scheduler from the Go module proxy (once), or verify them.",
    )
    for p in (up, status, restart):
        p.add_argument("-o", "--output", choices=("text", "json"), default="text", help="text (default) or json")
    for p in (up, build_cmd):
        kube_version.add_flag(p)
    for p in (up, build_cmd, status, restart, down):
        p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dispatch to the action."""
    try:
        if args.dev_cluster_command == "build":
            return _build(kube_version.release(args).version)
        if args.dev_cluster_command == "status":
            return _status(args)
        if args.dev_cluster_command == "restart-scheduler":
            return _restart(args)
        if args.dev_cluster_command == "down":
            return _down(args)
    except devcluster.DevClusterError as err:
        raise CLIError(str(err)) from None
    return _up(args)


def _binaries(k8s: str = KUBERNETES_VERSION) -> build.Binaries:
    try:
        found = build.cached(k8s)
        if found is None:
            print(f"{PREFIX} control-plane binaries not built yet; building (15-30 min when cold)", file=sys.stderr)
            with Progress(PREFIX) as progress:
                found = build.ensure(k8s, progress=progress)
    except build.BuildError as err:
        raise CLIError(f"cannot build the control-plane binaries: {err}") from None
    return found


def _version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    lines = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not lines:
        raise CLIError(f"{binary} --version failed (exit {out.returncode}): {out.stderr.strip()}")
    return lines[0]


def _build(k8s: str) -> int:
    bins = _binaries(k8s)
    for path in (bins.etcd, bins.kube_apiserver, bins.kube_scheduler):
        size = path.stat().st_size / 1e6
        print(f"{path}  ({_version(path)}, {size:.0f} MB)")
    stamp = bins.etcd.parent.parent / "stamp.json"
    if stamp.is_file():
        seconds: dict[str, float] = json.loads(stamp.read_text()).get("seconds", {})
        parts = ", ".join(f"{name} {sec:.0f}s" for name, sec in seconds.items())
        print(f"cold build time: {sum(seconds.values()):.0f}s ({parts}); recorded in {stamp}")
    return 0


def _scheduler_config(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.no_scheduler:
        if args.scheduler_config is not None:
            raise CLIError("--scheduler-config and --no-scheduler contradict each other")
        return None
    try:
        return load_config(args.scheduler_config if args.scheduler_config is not None else minimal_config())
    except SchedulerConfigError as err:
        raise CLIError(str(err)) from None


def _nodes(args: argparse.Namespace) -> tuple[list[str], list[FileNode]]:
    count = args.nodes if args.nodes is not None else (0 if args.nodes_file else 1)
    if count < 0:
        raise CLIError(f"--nodes must be 0 or more, got {count}")
    plain = [f"node-{i}" for i in range(count)]
    try:
        from_file = load_nodes_file(args.nodes_file) if args.nodes_file else []
    except NodesFileError as err:
        raise CLIError(str(err)) from None
    clash = sorted(set(plain) & {n.name for n in from_file})
    if clash:
        raise CLIError(f"{args.nodes_file} defines {', '.join(clash)}, which --nodes {count} creates too")
    return plain, from_file


def _install_signal_handlers() -> None:
    """SIGINT and SIGTERM both end the foreground wait; a second signal is ignored while we clean up."""
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if received:
            print(f"{PREFIX} still stopping, please wait", file=sys.stderr, flush=True)
            return
        received.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


class _Cluster:
    """The ``up`` process's view: the control plane, what it was started with, and its published state."""

    def __init__(self, plane: ControlPlane, args: argparse.Namespace, out: TextIO):
        self.plane = plane
        self.out = out
        self.nodes: list[str] = []
        self.config_source = str(args.scheduler_config.resolve()) if args.scheduler_config else None
        self.keep = bool(getattr(args, "keep", False))
        self.version = ""

    def say(self, line: str) -> None:
        print(f"{PREFIX} {line}", file=self.out, flush=True)

    def scheduler(self) -> Any:
        return next((s for s in self.plane.schedulers if s.name == SCHEDULER), None)

    def state(self) -> dict[str, Any]:
        """What ``-o json`` prints and the state file holds."""
        plane, bins = self.plane, self.plane.binaries
        procs = {p.name: p for p in plane.processes()}
        sched = self.scheduler()
        return {
            "pid": os.getpid(),
            "dataDir": str(plane.workdir),
            "logsDir": str(plane.logs_dir),
            "kubeconfig": str(plane.admin_kubeconfig),
            "apiServer": {
                "url": plane.url,
                "version": self.version,
                "pid": procs["kube-apiserver"].pid,
                "binary": str(bins.kube_apiserver),
                "caFile": str(plane.ca_file),
            },
            "etcd": {"url": plane.etcd_url, "pid": procs["etcd"].pid, "binary": str(bins.etcd)},
            "scheduler": None
            if sched is None or not sched.running
            else {
                "name": sched.name,
                "url": sched.url,
                "pid": sched.pid,
                "binary": str(sched.binary),
                "config": str(sched.config_path),
                "configSource": self.config_source,
                "log": str(sched.log_path),
            },
            "nodes": list(self.nodes),
            "keep": self.keep,
            # A bearer token kube-apiserver accepts besides the admin kubeconfig's client certificate (curl, UIs).
            "token": {"user": TOKEN_ADMIN, "groups": ["system:masters"], "value": plane.admin_token},
        }

    def publish(self) -> None:
        devcluster.publish(self.plane.workdir, self.state())

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """A control request from `restart-scheduler`."""
        if request.get("action") != "restart-scheduler":
            return {"ok": False, "error": f"unknown action {request.get('action')!r}"}
        sched = self.scheduler()
        config = request.get("config")
        if not isinstance(config, dict | None) or not isinstance(request.get("configSource"), str | None):
            return {"ok": False, "error": "config must be a mapping (a KubeSchedulerConfiguration) or null"}
        try:
            if config is None:
                config = load_config(sched.config_path) if sched is not None else minimal_config()
            with tables.progress("restarting kube-scheduler"):
                origin = request.get("configSource") or (str(sched.config_path) if sched else None)
                sched = self.plane.reconfigure_scheduler(SCHEDULER, config, origin=origin)
        except (SchedulerConfigError, ProcessError, APIError, TimeoutError, OSError) as err:
            self.say(f"restart-scheduler refused: {err}")
            self.publish()
            return {"ok": False, "error": str(err), "state": self.state()}
        if request.get("configSource") is not None:
            self.config_source = request["configSource"]
        self.say(f"kube-scheduler restarted: {sched.url} pid {sched.pid} (config {self.config_source or 'default'})")
        self.publish()
        return {"ok": True, "state": self.state()}


def _up(args: argparse.Namespace) -> int:
    # Bad input fails before any build or start.
    release = kube_version.release(args)
    config = _scheduler_config(args)
    plain, from_file = _nodes(args)
    json_out = args.output == "json"
    bins = _binaries(release.version)
    _install_signal_handlers()
    plane = ControlPlane(bins, keep_logs=True if args.keep else None)
    cluster = _Cluster(plane, args, sys.stderr if json_out else sys.stdout)
    try:
        with contextlib.ExitStack() as stack:
            with tables.progress("starting etcd and kube-apiserver"):
                stack.enter_context(plane)
            _bring_up(cluster, config, plain, from_file, args.nodes_file)
            stack.callback(devcluster.withdraw)
            cluster.publish()
            if json_out:
                print(json.dumps(cluster.state()), flush=True)
            cluster.say("running; Ctrl-C to stop")
            return _foreground(cluster)
    except KeyboardInterrupt:
        print(f"{PREFIX} stopped", file=cluster.out, flush=True)
        return 0
    except (ProcessError, APIError, TimeoutError, build.BuildError) as err:
        raise CLIError(str(err)) from None


def _bring_up(
    cluster: _Cluster, config: dict[str, Any] | None, plain: list[str], from_file: list[FileNode], path: Path | None
) -> None:
    plane, say = cluster.plane, cluster.say
    say(f"etcd {plane.etcd_url}")
    cluster.version = plane.api("GET", "/version")["gitVersion"]
    say(f"kube-apiserver {plane.url} ({cluster.version})")
    if config is not None:
        with tables.progress("starting kube-scheduler"):
            sched = plane.start_scheduler(config, name=SCHEDULER)
        say(f"kube-scheduler {sched.url} (binary {sched.binary}, config {sched.config_path})")
    with tables.progress(f"registering {len(plain) + len(from_file)} fake node(s)"):
        for name in plain:
            plane.create_node(name)
            cluster.nodes.append(name)
        for node in from_file:
            try:
                plane.create_node_object(node.manifest, node.status)
            except APIError as err:
                where = f"{path}: {node.path or 'the node'} ({node.name})"
                # The file is wrong, not the cluster: its logs are no help (unless --keep asks for them).
                plane.keep_logs = cluster.keep
                plane.stop()
                raise CLIError(f"{where}: kube-apiserver refused it: {err.status} {_message(err)}") from None
            cluster.nodes.append(node.name)
    say(f"{len(cluster.nodes)} fake node(s): {', '.join(cluster.nodes) or '-'}")
    say(f"logs in {plane.logs_dir}")
    print(f"admin kubeconfig: {plane.admin_kubeconfig}", file=cluster.out, flush=True)
    print(f"export KUBECONFIG={plane.admin_kubeconfig}", file=cluster.out, flush=True)


def _message(err: APIError) -> str:
    return str(err.body.get("message", err.body)) if isinstance(err.body, dict) else str(err.body)


def _foreground(cluster: _Cluster) -> int:
    """Answer control requests; if a component dies meanwhile, report it and fail; return on a signal."""
    plane = cluster.plane
    next_check = 0.0
    while True:
        devcluster.serve_pending(plane.workdir, cluster.handle)
        time.sleep(0.2)
        if time.monotonic() < next_check:
            continue
        next_check = time.monotonic() + 1.0
        dead = [p for p in plane.processes() if not p.running]
        sched = cluster.scheduler()
        dead_scheds = [sched] if sched is not None and not sched.running else []
        if dead or dead_scheds:
            plane.keep_logs = True
            for proc in dead:
                print(f"{PREFIX} {proc.died_error()}", file=sys.stderr, flush=True)
            for s in dead_scheds:
                print(f"{PREFIX} {s.name} exited; last lines:\n{s.tail()}", file=sys.stderr, flush=True)
            return 1


def _status(args: argparse.Namespace) -> int:
    state = devcluster.read_state(devcluster.locate(args.dir))
    _print_state(state, args.output)
    return 0


def _down(args: argparse.Namespace) -> int:
    data_dir = devcluster.locate(args.dir)
    with tables.progress("stopping the dev-cluster"):
        state = devcluster.stop(data_dir, timeout=args.timeout)
    kept = f"; its data dir {data_dir} is kept (--keep)" if data_dir.exists() else ""
    print(f"{PREFIX} stopped (pid {state['pid']}, kube-apiserver {state['apiServer']['url']}){kept}")
    return 0


def _print_state(state: dict[str, Any], output: str) -> None:
    if output == "json":
        print(json.dumps(state, indent=1))
        return
    api, etcd, sched = state["apiServer"], state["etcd"], state.get("scheduler")
    print(f"data dir:       {state['dataDir']} (pid {state['pid']})")
    print(f"kubeconfig:     {state['kubeconfig']}")
    print(f"kube-apiserver: {api['url']} ({api['version']}, pid {api['pid']})")
    print(f"etcd:           {etcd['url']} (pid {etcd['pid']})")
    if sched:
        print(f"kube-scheduler: {sched['url']} (pid {sched['pid']}, {sched['binary']})")
        print(f"  config:       {sched['config']} (from {sched['configSource'] or 'the default'})")
    else:
        print("kube-scheduler: not running")
    print(f"nodes:          {', '.join(state['nodes']) or '-'}")
    token = state.get("token")
    if isinstance(token, dict):
        print(f"token:          {token.get('user')} (system:masters): -o json's token.value")
    if state.get("keep"):
        print("keep:           the data dir stays after `kubesched dev-cluster down`")


def _restart(args: argparse.Namespace) -> int:
    data_dir = devcluster.locate(args.dir)
    payload: dict[str, Any] = {"config": None, "configSource": None}
    if args.config is not None:
        try:
            payload = {"config": load_config(args.config), "configSource": str(args.config.resolve())}
        except SchedulerConfigError as err:
            raise CLIError(str(err)) from None
    with tables.progress("restarting kube-scheduler"):
        answer = devcluster.request(data_dir, "restart-scheduler", payload, timeout=args.timeout)
    if not answer.get("ok"):
        raise CLIError(f"kube-scheduler not restarted: {answer.get('error')}")
    state = answer["state"]
    if args.output == "json":
        print(json.dumps(state, indent=1))
    else:
        sched = state["scheduler"]
        print(f"{PREFIX} kube-scheduler restarted: {sched['url']} pid {sched['pid']} (config {sched['config']})")
    return 0
