"""`kubesched manifests` for the extender: its flags, the policy read (what it manages, whether it reads pods) and
the certificates of a binding extender (its serving certificate and kube-scheduler's client certificate)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from kubesched import pki
from kubesched.cli import kube_version
from kubesched.cli.certs_cmd import service_names
from kubesched.config.v1 import ManagedResource
from kubesched.deploy import extender
from kubesched.deploy.plan import DEFAULT_POLICY, ExtenderPlan, ExtenderTLS, WatchPods
from kubesched.errors import CLIError
from kubesched.policies import PolicyError, is_builtin, needs_pods, pod_blindness
from kubesched.policies import load as load_policy

CERT_FILES = ("ca.crt", "tls.crt", "tls.key", "client.crt", "client.key")


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--watch-pods",
        choices=("auto", "yes", "no"),
        default="auto",
        help="extender serve --watch-pods: auto (the default) watches the cluster's pods unless every plugin of the "
        "policy declares it reads none; no drops the pods list+watch grant (a warning when the policy reads pods)",
    )
    group.add_argument(
        "--extender-certs-dir",
        metavar="DIR",
        type=Path,
        help="--bind: ca.crt, tls.crt, tls.key, client.crt, client.key made by kubesched certs --service "
        "kubesched-extender --namespace NS --client kube-scheduler (or --generate-certs)",
    )


def certs_command(namespace: str) -> str:
    return f"kubesched certs --service {extender.EXTENDER} --namespace {namespace} --client {extender.CLIENT_CN}"


def extender_plan(args: argparse.Namespace, scheduler_name: str) -> ExtenderPlan:
    spec = args.policy or DEFAULT_POLICY
    module = spec.rpartition(":")[0] or spec
    if not (args.load_plugins or is_builtin(spec)) and (module.endswith(".py") or "." in module):
        # Its managed resources set the extender's flags and RBAC: only importing it tells them.
        raise CLIError(
            f"--policy {spec}: rendering a policy that is not built in imports it, which runs its code on this "
            "machine: add --load-plugins (see docs/security.md)"
        )
    try:
        policy = load_policy(spec)
    except PolicyError as err:
        raise CLIError(f"--policy: {err}") from None
    watch: WatchPods = args.watch_pods
    blind = pod_blindness(policy) if watch == "no" else None
    if blind:
        print(f"kubesched: warning: --watch-pods no: {blind} (watch them: --watch-pods auto)", file=sys.stderr)
    if watch == "auto" and not needs_pods(policy):
        print(
            f"kubesched: note: policy {policy.name} reads no pods (every plugin declares reads_pods = False): the "
            "extender will not watch them; --watch-pods no also drops the pods list+watch grant",
            file=sys.stderr,
        )
    target, sep, attr = spec.partition(":")
    files: dict[str, str] = {}
    if target.endswith(".py"):
        # The file goes into a ConfigMap and is mounted; the container loads it from there.
        path = Path(target)
        files[path.name] = read_text(path, "--policy")
        spec = f"{extender.POLICY_DIR}/{path.name}" + (f":{attr}" if sep else "")
    return ExtenderPlan(
        policy=spec,
        policy_files=files,
        managed_resources=tuple(ManagedResource(r.name, r.ignored_by_scheduler) for r in policy.managed_resources),
        bind=args.bind,
        scheduler_name=scheduler_name,
        kube_scheduler_image=args.kube_scheduler_image or kube_version.release(args).kube_scheduler_image,
        watch_pods=watch,
        tls=_tls(args) if args.bind and not args.kustomize else None,
    )


def _tls(args: argparse.Namespace) -> ExtenderTLS:
    if args.generate_certs:
        if args.cert_days <= 0:
            raise CLIError("--cert-days: must be positive")
        valid_for = dt.timedelta(days=args.cert_days)
        ca = pki.new_ca("kubesched extender CA", valid_for=valid_for)
        names = service_names(extender.EXTENDER, args.namespace)
        serving = pki.serving_cert(ca, extender.dns_name(args.namespace)[:64], dns_names=names, valid_for=valid_for)
        client = pki.client_cert(ca, extender.CLIENT_CN, valid_for=valid_for)
        return ExtenderTLS(ca.cert_pem, serving.cert_pem, serving.key_pem, client.cert_pem, client.key_pem)
    directory: Path | None = args.extender_certs_dir
    if directory is None:
        raise CLIError(
            "--bind: kube-scheduler calls a binding extender over HTTPS with a client certificate: give "
            f"--extender-certs-dir DIR (made by: {certs_command(args.namespace)} --out DIR) or --generate-certs"
        )
    pems: list[bytes] = []
    for name in CERT_FILES:
        try:
            pems.append((directory / name).read_bytes())
        except OSError as err:
            raise CLIError(f"--extender-certs-dir: cannot read {directory / name}: {err.strerror or err}") from None
    return ExtenderTLS(*pems)


def read_text(path: Path, flag: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CLIError(f"{flag}: cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
