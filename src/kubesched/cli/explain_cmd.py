"""`kubesched explain NAMESPACE/POD`: why a pod is pending or why it landed where it did, node by node."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from pathlib import Path

import msgspec

from kubesched.cli import connection, explain_recorded, kube_version
from kubesched.cli.connection import KUBECONFIG_HELP
from kubesched.cli.plugins_cmd import add_plugins_from_flag, image_only
from kubesched.cli.scheduler_cmd import builder, config_problem, read_config
from kubesched.cluster.files import ClusterFile, ClusterFileError, read_cluster
from kubesched.cluster.kubeclient import KubeClient
from kubesched.cluster.snapshot import SnapshotError, take, write_atomically
from kubesched.errors import CLIError, ConfigurationError
from kubesched.framework.guard import FrameworkError
from kubesched.scheduler.explain.evaluate import ExplainError, explain
from kubesched.scheduler.explain.model import Explanation
from kubesched.scheduler.explain.offline import ReadOnlyExtenders, objects_of
from kubesched.scheduler.explain.render import text
from kubesched.versions import Release

DESCRIPTION = """\
Explain one pod's scheduling as kube-scheduler would do it now: for every node, the status kube-scheduler
reports for it (its first failing Filter plugin, with kube-scheduler's message) and every other Filter
plugin that fails it; each PreFilter plugin's verdict; for the nodes kube-scheduler scores (its
percentageOfNodesToScore sample), each Score plugin's raw, normalized and weighted score; the chosen node
and its lead over the next; the FailedScheduling message word for word; what preemption would do; and,
for a pod that fits nowhere, what single change to its spec would open the most nodes (each change run
through the filters again, never guessed).

The pod is run through a fresh in-memory scheduler on the cluster's objects, as `scheduler run --cluster`
would run it next: other pending pods are left out, a bound pod is explained as if it were pending.
Without --cluster, the live cluster is read first (as `kubesched snapshot`: --kubeconfig, else as kubectl
finds it); nothing is written to it. --scheduler URL shows what a running `kubesched scheduler run` decided
(its last decision of the pod, kept with --decision-records), and says so; when it has no record, the pod
is evaluated afresh with a note. As a kubectl plugin: `kubesched kubectl-plugin` installs
`kubectl-kubesched`, then `kubectl kubesched explain POD -n NS`.
-o json writes the documented schema (apiVersion kubesched.io/v1alpha1, kind Explanation: docs/explain.md).
"""

EPILOG = """\
Examples:
  kubesched explain default/web-0 --cluster cluster.yaml
  kubesched explain team-a/trainer-3 --kubeconfig ~/.kube/config -o json
  kubesched explain trainer-3 -n team-a --scheduler http://127.0.0.1:10251
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser(
        "explain",
        help="why a pod is pending (or where it lands and why): every node, every plugin",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("pod", metavar="NAMESPACE/POD", help="the pod (a name alone: in --namespace, else default)")
    cmd.add_argument("-n", "--namespace", help="the pod's namespace, as kubectl's -n")
    where = cmd.add_mutually_exclusive_group()
    where.add_argument(
        "--cluster", type=Path, metavar="FILE", help="a cluster file (kubesched snapshot, kubectl get -o yaml)"
    )
    where.add_argument("--kubeconfig", metavar="FILE", help=f"without --cluster, the live cluster: {KUBECONFIG_HELP}")
    cmd.add_argument(
        "--scheduler",
        metavar="URL",
        help="a running `kubesched scheduler run` (its --listen, e.g. http://127.0.0.1:10251): show the decision it "
        "recorded; evaluated afresh too with --kubeconfig/--cluster, or when it has no record",
    )
    connection.add_flags(cmd, kubeconfig=False)
    cmd.add_argument("--config", type=Path, help="KubeSchedulerConfiguration (default: kube-scheduler's defaults)")
    kube_version.add_flag(cmd)
    add_plugins_from_flag(cmd, "the config's pluginModules")
    cmd.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "html"),
        default="text",
        help='output format (default text); html: a self-contained page (docs/explain.md, "The report")',
    )
    cmd.add_argument("--all-nodes", action="store_true", help="text: list every node (default: at most 50)")
    cmd.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="live cluster: seconds one list request may take before it is asked again, as kubectl's (default 30;"
        " a page is asked at most 8 times)",
    )
    cmd.set_defaults(func=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="kubesched: %(levelname)s: %(message)s")
    release = kube_version.release(args)
    if not args.request_timeout > 0:
        raise CLIError(f"--request-timeout: {args.request_timeout} must be a positive number of seconds")
    if args.config is not None and not args.config.is_file():
        raise CLIError(f"--config: no such file {args.config}")
    try:
        config, errors = read_config(args.config, False, args)
    except ConfigurationError as err:
        raise config_problem(err, args.config) from None
    if errors:
        raise config_problem(ConfigurationError(errors=errors), args.config)
    key = _key(args.pod, args.namespace)
    recorded, why_not, scheduler_name = (
        explain_recorded.fetch(args.scheduler, key) if args.scheduler else (None, "", "")
    )
    if recorded is not None and args.cluster is None and args.kubeconfig is None:
        note = "recorded by the running scheduler; add --kubeconfig or --cluster for every node, evaluated afresh"
        ex = Explanation(
            pod=key,
            kubernetes_version=f"v{release.version}",
            profile=scheduler_name,
            node=recorded.node,
            message=recorded.message,
            recorded=recorded,
            notes=[note],
        )
        _write(ex, args)
        return 0
    found, release = _objects(args, release)
    for warning in found.warnings:
        logging.getLogger("kubesched.cluster").warning("%s", warning)
    objects = objects_of(found)
    build = builder(config, [], release, image_only(args))
    try:
        ex = asyncio.run(explain(build, objects, key, f"v{release.version}", extenders=ReadOnlyExtenders))
        ex.recorded = recorded
        if why_not:
            ex.notes.insert(0, f"{why_not}; evaluated afresh")
    except ExplainError as err:
        raise CLIError(str(err)) from None
    except ConfigurationError as err:
        raise config_problem(err, args.config) from None
    except FrameworkError as err:
        raise CLIError(f"explaining {args.pod}: {err}") from None
    _write(ex, args)
    return 0


def _key(pod: str, namespace: str | None) -> str:
    if "/" in pod:
        if namespace is not None and pod.split("/", 1)[0] != namespace:
            raise CLIError(f"{pod}: names namespace {pod.split('/', 1)[0]}, but --namespace says {namespace}")
        return pod
    return f"{namespace or 'default'}/{pod}"


def _write(ex: Explanation, args: argparse.Namespace) -> None:
    if args.output == "json":
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(ex), indent=2).decode() + "\n")
    elif args.output == "html":
        from kubesched.scheduler.report.explanation import explanation_html  # plotly: only for a report

        sys.stdout.write(explanation_html(ex))
    else:
        sys.stdout.write(text(ex, args.all_nodes))


def _objects(args: argparse.Namespace, release: Release) -> tuple[ClusterFile, Release]:
    """The cluster's objects, and the release to follow (a live cluster's own, unless --kubernetes-version)."""
    if args.cluster is not None:
        if args.in_cluster or args.context:
            raise CLIError("--cluster reads a file; it excludes --in-cluster and --context")
        try:
            return read_cluster(args.cluster), release
        except ClusterFileError as err:
            raise CLIError(str(err)) from None
    conn = connection.connection(args, otherwise="or --cluster FILE")
    release = kube_version.for_connection(args, conn)

    async def snapshot() -> dict[str, object]:
        client = KubeClient(conn, args.request_timeout, connections=2, user_agent="kubesched/explain")
        try:
            return (await take(client)).documents()
        finally:
            await client.aclose()

    try:
        doc = asyncio.run(snapshot())
    except SnapshotError as err:
        raise CLIError(f"reading the cluster: {err}") from None
    with tempfile.TemporaryDirectory(prefix="kubesched-explain-") as tmp:
        path = Path(tmp) / "cluster.yaml"
        write_atomically(path, doc)  # the very file `kubesched snapshot` writes, read as one
        try:
            return read_cluster(path), release
        except ClusterFileError as err:
            raise CLIError(f"the live cluster's objects: {err}") from None
