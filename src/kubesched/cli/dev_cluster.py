"""`kubesched dev-cluster up|build`: a throwaway etcd + kube-apiserver (+ kube-scheduler) with fake nodes."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from kubesched.cli import tables
from kubesched.errors import CLIError
from kubesched.testing import build
from kubesched.testing.controlplane import ApiError, ControlPlane
from kubesched.testing.process import ProcessError
from kubesched.testing.scheduler import SchedulerConfigError, load_config, minimal_config

PREFIX = "kubesched dev-cluster:"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `dev-cluster up` and `dev-cluster build`."""
    parser = subparsers.add_parser(
        "dev-cluster",
        help="run a local etcd + kube-apiserver + kube-scheduler with fake nodes",
        description="A real control plane on 127.0.0.1, built from the Go module proxy on first use.",
    )
    sub = parser.add_subparsers(dest="dev_cluster_command", required=True, metavar="ACTION")
    up = sub.add_parser(
        "up",
        help="start the cluster and stay in the foreground until Ctrl-C",
        description="Start etcd, kube-apiserver and kube-scheduler on free loopback ports, register N fake nodes "
        "(node-0..; 8 cpu, 32Gi, 110 pods), print the admin kubeconfig, and run until SIGINT/SIGTERM.",
    )
    up.add_argument("--nodes", type=int, default=1, metavar="N", help="number of fake nodes (default 1)")
    up.add_argument(
        "--scheduler-config",
        type=Path,
        metavar="FILE",
        help="KubeSchedulerConfiguration YAML (clientConnection.kubeconfig is filled in); default: one profile",
    )
    up.add_argument("--no-scheduler", action="store_true", help="do not run kube-scheduler")
    up.add_argument("--keep", action="store_true", help="keep the working directory (logs, kubeconfigs) on exit")
    build_cmd = sub.add_parser("build", help="build (or verify) the cached control-plane binaries")
    for p in (up, build_cmd):
        p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dispatch to `up` or `build`."""
    if args.dev_cluster_command == "build":
        return _build()
    return _up(args)


def _binaries() -> build.Binaries:
    try:
        found = build.cached()
        if found is None:
            print(f"{PREFIX} control-plane binaries not built yet; building (15-30 min when cold)", flush=True)
            found = build.ensure(echo=True)
    except build.BuildError as err:
        raise CLIError(f"cannot build the control-plane binaries: {err}") from None
    return found


def _version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    lines = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not lines:
        raise CLIError(f"{binary} --version failed (exit {out.returncode}): {out.stderr.strip()}")
    return lines[0]


def _build() -> int:
    bins = _binaries()
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


def _up(args: argparse.Namespace) -> int:
    if args.nodes < 0:
        raise CLIError(f"--nodes must be 0 or more, got {args.nodes}")
    config = _scheduler_config(args)  # bad input fails before any build or start
    bins = _binaries()
    _install_signal_handlers()
    plane = ControlPlane(bins, keep_logs=True if args.keep else None)
    try:
        with contextlib.ExitStack() as stack:
            with tables.progress("starting etcd and kube-apiserver"):
                stack.enter_context(plane)
            _bring_up(plane, config, args.nodes)
            return _foreground(plane)
    except KeyboardInterrupt:
        print(f"{PREFIX} stopped", flush=True)
        return 0
    except (ProcessError, ApiError, TimeoutError, build.BuildError) as err:
        raise CLIError(str(err)) from None


def _bring_up(plane: ControlPlane, config: dict[str, Any] | None, nodes: int) -> None:
    print(f"{PREFIX} etcd {plane.etcd_url}", flush=True)
    version = plane.api("GET", "/version")["gitVersion"]
    print(f"{PREFIX} kube-apiserver {plane.url} ({version})", flush=True)
    if config is not None:
        with tables.progress("starting kube-scheduler"):
            sched = plane.start_scheduler(config, name="kube-scheduler")
        print(f"{PREFIX} kube-scheduler {sched.url} (config {sched.config_path})", flush=True)
    with tables.progress(f"registering {nodes} fake node(s)"):
        for i in range(nodes):
            plane.create_node(f"node-{i}")
    print(f"{PREFIX} {nodes} fake node(s): {', '.join(f'node-{i}' for i in range(nodes)) or '-'}", flush=True)
    print(f"{PREFIX} logs in {plane.logs_dir}", flush=True)
    print(f"admin kubeconfig: {plane.admin_kubeconfig}", flush=True)
    print(f"export KUBECONFIG={plane.admin_kubeconfig}", flush=True)
    print(f"{PREFIX} running; Ctrl-C to stop", flush=True)


def _foreground(plane: ControlPlane) -> int:
    """Wait for a signal; if a component dies meanwhile, report it and fail."""
    while True:
        time.sleep(1.0)
        dead = [p for p in plane.processes() if not p.running]
        dead_scheds = [s for s in plane.schedulers if not s.running]
        if dead or dead_scheds:
            plane.keep_logs = True
            for proc in dead:
                print(f"{PREFIX} {proc.died_error()}", file=sys.stderr, flush=True)
            for sched in dead_scheds:
                print(f"{PREFIX} {sched.name} exited; last lines:\n{sched.tail()}", file=sys.stderr, flush=True)
            return 1
