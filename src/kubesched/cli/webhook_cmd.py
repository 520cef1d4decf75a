"""`kubesched webhook serve`: the admission webhook over HTTPS, with its rules and (for feasibility) the nodes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import ssl
from pathlib import Path

from kubesched.cli import connection, logs, serving
from kubesched.cli.plugins_cmd import add_plugins_from_flag, image_only
from kubesched.cli.serving import parse_listen, wait_for_stop_signal
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.files import ClusterFileError, read_objects
from kubesched.cluster.kubeclient import KubeClient
from kubesched.cluster.source import KubeSource
from kubesched.config.validation import qualified_name_errors
from kubesched.errors import CLIError
from kubesched.http.server import HTTPServer
from kubesched.http.tls import ServingTLS
from kubesched.webhook import rules_file as webhook_config
from kubesched.webhook.app import DEFAULT_MAX_BODY, WebhookRoutes
from kubesched.webhook.service import AdmissionService

log = logging.getLogger("kubesched.webhook")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    hook = sub.add_parser("webhook", help="serve the pod admission webhook")
    hook_sub = hook.add_subparsers(dest="webhook_command", required=True, metavar="COMMAND")
    serve = hook_sub.add_parser("serve", help="serve POST /validate and /mutate (AdmissionReview v1) over HTTPS")
    serve.add_argument("--config", type=Path, required=True, help="the rules (YAML, see docs/webhook.md)")
    add_plugins_from_flag(serve, "python rules")
    serve.add_argument("--tls-cert", type=Path, help="serving certificate (PEM); required: HTTPS only")
    serve.add_argument("--tls-key", type=Path, help="private key of --tls-cert; required")
    serve.add_argument("--listen", default="0.0.0.0:8443", help="HOST:PORT (default 0.0.0.0:8443)")
    src = serve.add_argument_group(
        "nodes for feasibility rules", "a cluster found as kubectl finds it (--kubeconfig, $KUBECONFIG, in-cluster,"
        " ~/.kube/config), or --nodes FILE"
    )  # fmt: skip
    connection.add_flags(src, what="list+watch nodes from this cluster")
    src.add_argument("--nodes", type=Path, help="file of Node objects (NodeList or list, JSON or YAML): no cluster")
    serve.add_argument(
        "--managed-resource", action="append", default=[], metavar="NAME",
        help="export this resource's allocatable and requested amounts per node (repeatable; e.g. nvidia.com/gpu)."
        " With a cluster, the webhook then also watches pods (to count requests); with --nodes, allocatable only",
    )  # fmt: skip
    serving.add_limit_flags(serve, max_body=DEFAULT_MAX_BODY)
    logs.add_flags(serve)
    serve.set_defaults(func=run_serve)


def managed_resources(names: list[str], flag: str = "--managed-resource") -> list[str]:
    """`names` as given, each checked to be a resource name (a qualified name: `cpu`, `nvidia.com/gpu`)."""
    for name in names:
        problems = qualified_name_errors(name)
        if problems:
            raise CLIError(f"{flag} {name!r}: not a resource name: {'; '.join(problems)}")
    return list(dict.fromkeys(names))  # a repeated name is one resource, not two gauges


def _tls(cert: Path | None, key: Path | None) -> ServingTLS:
    if cert is None or key is None:
        raise CLIError("the webhook serves HTTPS only: give --tls-cert and --tls-key (kubesched certs makes them)")
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not path.is_file():
            raise CLIError(f"{flag}: no such file {path}")
    try:
        return ServingTLS(cert, key)  # reloaded when the files change
    except (ssl.SSLError, OSError, ValueError) as err:  # OSError: e.g. a key the user may not read
        reason = getattr(err, "reason", None) or getattr(err, "strerror", None) or err
        raise CLIError(f"--tls-cert/--tls-key: not a usable certificate and key: {reason}") from None


def run_serve(args: argparse.Namespace) -> int:
    logs.setup(args.log_level, args.log_format, args.v)
    host, port = parse_listen(args.listen)
    tls = _tls(args.tls_cert, args.tls_key)
    limits = serving.limits_from(args)
    managed = managed_resources(args.managed_resource)
    if args.nodes and (args.kubeconfig or args.in_cluster):
        raise CLIError("--nodes excludes --kubeconfig and --in-cluster")
    cache = ClusterCache()  # nodes only, never pods: feasibility asks "could it ever fit"
    try:
        config = webhook_config.load(args.config, cache, python="installed" if image_only(args) else "any")
    except webhook_config.WebhookConfigError as err:
        raise CLIError(str(err)) from None
    conn = None
    if not config.needs_nodes and not managed:
        if args.nodes or args.kubeconfig or args.in_cluster:
            log.info("no feasibility rule: --nodes/--kubeconfig/--in-cluster not used")
        cache.synced.set()
    elif args.nodes:
        try:
            nodes, _ = read_objects(args.nodes)
        except ClusterFileError as err:
            raise CLIError(str(err)) from None
        cache.replace_nodes(nodes)
        cache.synced.set()
        log.info("nodes loaded from %s: %d", args.nodes, len(nodes))
    else:
        needs = "feasibility rules need nodes" if config.needs_nodes else "--managed-resource needs the cluster"
        try:
            conn = connection.connection(args, otherwise="or give --nodes FILE")
        except CLIError as err:
            raise CLIError(f"{needs}: {err}") from None

    async def main() -> None:
        client = KubeClient(conn) if conn else None
        service = AdmissionService(config)
        routes = WebhookRoutes(service, cache, max_body=args.max_body_bytes)
        server = HTTPServer(routes, host, port, tls.context, limits)
        service.metrics.registry.register(tls)
        tasks = [asyncio.create_task(tls.watch())]
        usage: ClusterCache | None = None
        if managed and client is not None:
            # Feasibility's cache must stay without pods: requests are counted in a cache of their own.
            usage = ClusterCache()
            service.metrics.follow_allocation(lambda: usage.table, managed, requested=True)
        elif managed:
            service.metrics.follow_allocation(lambda: cache.table, managed, requested=False)
        if client is not None:
            await serving.authenticate(client, log)
            if config.needs_nodes:
                source = KubeSource(cache, client, watch_pods=False)
                log.info("nodes follow %s", source.describe())
                tasks.append(asyncio.create_task(source.run()))
            else:
                cache.synced.set()
            if usage is not None:
                counted = KubeSource(usage, client, watch_pods=True)
                log.info("managed resources %s counted per node from %s", ", ".join(managed), counted.describe())
                tasks.append(asyncio.create_task(counted.run()))
        rules = ", ".join(f"{r.name} ({r.phase})" for r in config.rules)
        try:
            await server.start()
        except OSError as err:
            await serving.stop_tasks(tasks)
            raise CLIError(f"--listen {args.listen}: {err.strerror or err}") from None
        log.info("serving admission webhook on https://%s:%d: rules %s", host, port, rules)
        try:
            await wait_for_stop_signal()
        finally:
            await server.shutdown()
            await serving.stop_tasks(tasks)
            if client is not None:
                await client.aclose()

    serving.run(main())
    return 0
