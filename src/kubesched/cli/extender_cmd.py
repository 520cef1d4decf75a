"""`kubesched extender serve`: wire a policy, a cluster source and the HTTP server together."""

from __future__ import annotations

import argparse
import asyncio
import logging
import ssl
from pathlib import Path

from kubesched.cli import connection, kube_version, logs, serving
from kubesched.cli.plugins_cmd import add_plugins_from_flag, image_only
from kubesched.cli.serving import parse_listen, wait_for_stop_signal
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.files import ClusterFileError, load_into
from kubesched.cluster.kubeclient import KubeClient
from kubesched.cluster.ledger import DEFAULT_TTL, Ledger
from kubesched.cluster.source import KubeSource
from kubesched.errors import CLIError, ConfigurationError
from kubesched.extender.app import DEFAULT_MAX_BODY, Dispatcher
from kubesched.extender.service import ExtenderService
from kubesched.framework.handle import Handle
from kubesched.framework.runtime import Framework
from kubesched.http.server import HTTPServer
from kubesched.http.tls import ServingTLS
from kubesched.policies import PolicyError, load, needs_pods, pod_blindness, registry_for
from kubesched.versions import REFERENCE

log = logging.getLogger("kubesched.extender")
# What a client without a certificate may ask for under --client-ca: kubelet's probes and Prometheus' scrapes.
OPEN_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/metrics"})


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ext = sub.add_parser("extender", help="serve a policy as a kube-scheduler extender")
    ext_sub = ext.add_subparsers(dest="extender_command", required=True, metavar="COMMAND")
    serve = ext_sub.add_parser("serve", help="serve filter, prioritize, bind and preempt over HTTP(S)")
    serve.add_argument("--policy", required=True, help="built-in name (custom-label), path/to/policy.py, pkg.mod:attr")
    add_plugins_from_flag(serve, "--policy and its plugins")
    src = serve.add_argument_group(
        "cluster source", "a cluster found as kubectl finds it (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config),"
        " or --nodes FILE"
    )  # fmt: skip
    src.add_argument("--nodes", type=Path, help="file of Node objects (NodeList or list, JSON or YAML): no cluster")
    connection.add_flags(src, what="list+watch nodes (and pods) from this cluster and bind (with --nodes: only bind)")
    serve.add_argument(
        "--watch-pods",
        choices=("auto", "yes", "no"),
        default="auto",
        help="watch the cluster's pods, which plugins read (node.pods, usage, spreading); auto, the default: unless"
        " every plugin of the policy declares reads_pods = False and it manages no resource",
    )
    serve.add_argument(
        "--reservation-ttl",
        type=float,
        default=DEFAULT_TTL,
        metavar="SECONDS",
        help="how long a pod bound by this extender is counted on its node without the watch reporting it"
        " (default: %(default)g)",
    )
    serve.add_argument("--listen", default="127.0.0.1:8888", help="HOST:PORT (default 127.0.0.1:8888)")
    serve.add_argument("--prefix", default="", help="URL path prefix of the verbs, e.g. /scheduler")
    serve.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate (PEM)")
    serve.add_argument("--tls-key", type=Path, help="private key of --tls-cert")
    serve.add_argument(
        "--client-ca",
        type=Path,
        help="the verbs need a client certificate signed by this CA (kube-scheduler's tlsConfig); /healthz, /livez,"
        " /readyz and /metrics stay open for probes and scrapes",
    )
    serve.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="bind only pods whose spec.schedulerName is NAME, the kube-scheduler profile calling this extender"
        " (default: the policy's profile's, default-scheduler unless it says otherwise)",
    )
    serving.add_limit_flags(serve, max_body=DEFAULT_MAX_BODY)
    kube_version.add_flag(serve, connected=True)
    logs.add_flags(serve)
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    logs.setup(args.log_level, args.log_format, args.v)
    host, port = parse_listen(args.listen)
    if (args.tls_cert is None) != (args.tls_key is None):
        raise CLIError("--tls-cert and --tls-key go together")
    if args.client_ca and not args.tls_cert:
        raise CLIError("--client-ca needs --tls-cert and --tls-key (client certificates need HTTPS)")
    for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key), ("--client-ca", args.client_ca)):
        if path is not None and not path.is_file():
            raise CLIError(f"{flag}: no such file {path}")
    if not args.reservation_ttl > 0 or args.reservation_ttl == float("inf"):
        raise CLIError(f"--reservation-ttl: must be a positive number of seconds (got {args.reservation_ttl:g})")
    limits = serving.limits_from(args)
    if args.nodes and args.in_cluster:
        raise CLIError("--nodes and --in-cluster exclude each other")
    chosen = kube_version.selected(args)
    try:
        policy = load(args.policy, installed_only=image_only(args))
        registry = registry_for(policy)
    except PolicyError as err:
        raise CLIError(str(err)) from None
    cache = ClusterCache()
    if args.nodes:
        try:
            n_nodes, n_pods = load_into(cache, args.nodes)
        except ClusterFileError as err:
            raise CLIError(str(err)) from None
        log.info("node cache loaded from %s: %d nodes, %d pods", args.nodes, n_nodes, n_pods)
    # With --nodes, a cluster only to bind through, when named; else the cluster kubectl would talk to.
    conn = None
    if not args.nodes or args.kubeconfig:
        conn = connection.connection(args, otherwise="or --nodes FILE to serve a file's nodes without a cluster")
    # The policy's plugins follow --kubernetes-version, else the cluster's /version, else the reference.
    release = kube_version.for_connection(args, conn) if conn is not None else (chosen or REFERENCE)
    try:
        handle = Handle(scheduler_name=policy.profile.scheduler_name, release=release)
        framework = Framework.build(policy.profile, registry, handle, path="policy.")
    except PolicyError as err:
        raise CLIError(str(err)) from None
    except ConfigurationError as err:
        raise CLIError(f"policy {args.policy}: {err}") from None
    watch_pods = args.watch_pods == "yes" or (args.watch_pods == "auto" and needs_pods(policy))
    blind = pod_blindness(policy) if not watch_pods and not args.nodes else None
    if blind:
        log.warning("--watch-pods no: %s (watch them: --watch-pods auto)", blind)
    try:
        # Reloaded when the files change (a renewed certificate or client CA).
        tls = (
            ServingTLS(args.tls_cert, args.tls_key, args.client_ca, optional_client_cert=True)
            if args.tls_cert
            else None
        )
    except (ssl.SSLError, OSError, ValueError) as err:
        raise CLIError(f"--tls-cert/--tls-key/--client-ca: cannot load: {err}") from None

    async def main() -> None:
        client = KubeClient(conn) if conn else None
        ledger = Ledger(cache, ttl=args.reservation_ttl)
        service = ExtenderService(policy, framework, cache, client, ledger, scheduler_name=args.scheduler_name)
        dispatcher = Dispatcher(service, prefix=args.prefix, max_body=args.max_body_bytes)
        open_paths = OPEN_PATHS if args.client_ca else None
        server = HTTPServer(dispatcher, host, port, tls.context if tls else None, limits, open_paths)
        tasks = []
        if tls is not None:
            dispatcher.metrics.registry.register(tls)
            tasks.append(asyncio.create_task(tls.watch()))
        if client is not None:
            await serving.authenticate(client, log)
        if client is not None and not args.nodes:
            source = KubeSource(cache, client, watch_pods=watch_pods)
            log.info("node cache follows %s (pods: %s)", source.describe(), watch_pods)
            tasks.append(asyncio.create_task(source.run()))
        try:
            await server.start()
        except OSError as err:
            await serving.stop_tasks(tasks)
            raise CLIError(f"--listen {args.listen}: {err.strerror or err}") from None
        scheme = "https" if tls else "http"
        log.info("serving policy %s on %s://%s:%d%s", policy.name, scheme, host, port, args.prefix)
        if client is not None:
            log.info("binding only pods of scheduler %s", service.scheduler_name)
        try:
            await wait_for_stop_signal()
        finally:
            await server.shutdown()
            await serving.stop_tasks(tasks)
            if client is not None:
                await client.aclose()

    serving.run(main())
    return 0
