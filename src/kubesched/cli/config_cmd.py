"""`kubesched config extender` (write kube-scheduler's extender config) and `kubesched config validate FILE`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from kubesched.cli import kube_version
from kubesched.config.check import validate_text
from kubesched.config.duration import Duration
from kubesched.config.parse import read_document, read_text
from kubesched.config.render import Format, dump, render_config, render_legacy_policy, unreserved_note
from kubesched.config.v1 import (
    DEFAULT_SCHEDULER_NAME,
    LEGACY_KIND,
    Extender,
    LeaderElectionV1,
    LegacyPolicy,
    ManagedResource,
    ProfileV1,
    SchedulerConfigV1,
    TLSConfig,
)
from kubesched.config.validation import collect_warnings, validate
from kubesched.errors import CLIError, FieldError
from kubesched.scheduler.profiles.manager import PluginSource
from kubesched.versions import Release


class _ManagedResourceLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def ignored_by_scheduler(self) -> bool: ...


class _PolicyLike(Protocol):
    @property
    def managed_resources(self) -> Sequence[_ManagedResourceLike]: ...


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `config extender` and `config validate`."""
    config = subparsers.add_parser("config", help="generate or check kube-scheduler configuration")
    sub = config.add_subparsers(dest="config_command", required=True, metavar="COMMAND")
    _register_extender(sub)
    check = sub.add_parser(
        "validate",
        help="check a KubeSchedulerConfiguration or legacy Policy file",
        description="Parse a KubeSchedulerConfiguration (v1) or legacy Policy file, YAML or JSON, and report every "
        "problem with its field path, by kube-scheduler's rules (strict decoding, plugin names and args) plus "
        "kubesched's extensions (pluginModules are loaded) — the same check `scheduler run --config` makes. "
        "Prints 'ok' and exits 0 when the file is valid; '-' reads stdin.",
    )
    check.add_argument("file", metavar="FILE")
    kube_version.add_flag(check)
    check.set_defaults(func=run)


def _register_extender(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "extender",
        help="print a KubeSchedulerConfiguration that calls the kubesched extender",
        description="Print a KubeSchedulerConfiguration (or, with --legacy-policy, a pre-1.23 Policy file) with one "
        "extender entry. Problems are listed with field paths (exit 2); warnings go to stderr.",
    )
    p.add_argument("--url-prefix", required=True, metavar="URL", help="base URL; the verb is appended after '/'")
    p.add_argument("--filter-verb", default="filter", metavar="VERB", help="'' for no filter (default: %(default)s)")
    p.add_argument("--prioritize-verb", default="prioritize", metavar="VERB", help="'' for none (default: %(default)s)")
    p.add_argument("--bind-verb", default="", metavar="VERB", help="delegate binding to the extender")
    p.add_argument("--preempt-verb", default="", metavar="VERB", help="let the extender adjust preemption victims")
    p.add_argument("--weight", type=int, default=1, metavar="N", help="prioritize multiplier (default: %(default)s)")
    p.add_argument(
        "--node-cache-capable",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="send node names only, not full Node objects (default: on)",
    )
    p.add_argument(
        "--managed-resource",
        action="append",
        default=[],
        metavar="NAME[=ignored]",
        help="extended resource the extender manages; '=ignored' sets ignoredByScheduler (repeatable)",
    )
    p.add_argument("--policy", metavar="SPEC", help="take managedResources from this kubesched policy")
    p.add_argument("--ignorable", action="store_true", help="scheduling goes on when the extender fails")
    p.add_argument("--http-timeout", default="5s", metavar="DURATION", help="Go duration (default: %(default)s)")
    tls = p.add_argument_group("TLS (the URL scheme decides http/https; these only configure the client)")
    tls.add_argument("--enable-https", action="store_true", help="apply tlsConfig; needs an https:// URL")
    tls.add_argument("--ca-file", metavar="FILE", help="CA for the extender's certificate (none: not verified)")
    tls.add_argument("--cert-file", metavar="FILE", help="client certificate kube-scheduler presents")
    tls.add_argument("--key-file", metavar="FILE", help="key of the client certificate")
    tls.add_argument("--server-name", metavar="NAME", help="name to verify instead of the URL host")
    tls.add_argument("--insecure", action="store_true", help="skip verifying the extender's certificate")
    tls.add_argument("--embed-tls-data", action="store_true", help="inline the files as caData/certData/keyData")
    sched = p.add_argument_group("scheduler")
    sched.add_argument(
        "--scheduler-name", action="append", default=[], metavar="NAME", help="profile (default: default-scheduler)"
    )
    sched.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=None)
    sched.add_argument("--lease-name", metavar="NAME", help="leaderElection.resourceName (default kube-scheduler)")
    sched.add_argument("--lease-namespace", metavar="NS", help="leaderElection.resourceNamespace (default kube-system)")
    sched.add_argument("--kubeconfig", metavar="PATH", help="clientConnection.kubeconfig")
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=("yaml", "json"), help="default yaml (json with --legacy-policy)")
    out.add_argument("--legacy-policy", action="store_true", help="write a kind: Policy file (Kubernetes < 1.23)")
    out.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.config_command == "validate":
        return _run_validate(str(args.file), kube_version.release(args))
    return _run_extender(args)


def _run_extender(args: argparse.Namespace) -> int:
    try:
        timeout = Duration.parse(args.http_timeout)
    except ValueError as err:
        raise CLIError(f"--http-timeout: {err}") from err
    resources = _policy_resources(args.policy) if args.policy else ()
    extender = Extender(
        url_prefix=args.url_prefix,
        filter_verb=args.filter_verb,
        preempt_verb=args.preempt_verb,
        prioritize_verb=args.prioritize_verb,
        bind_verb=args.bind_verb,
        weight=args.weight,
        enable_https=args.enable_https,
        tls_config=_tls_config(args),
        http_timeout=timeout,
        node_cache_capable=args.node_cache_capable,
        managed_resources=resources + tuple(_managed_resource(v) for v in args.managed_resource),
        ignorable=args.ignorable,
    )
    model: SchedulerConfigV1 | LegacyPolicy
    if args.legacy_policy:
        # Before 1.23 these were kube-scheduler command-line flags, not part of the Policy file.
        scheduler_flags = ("scheduler_name", "leader_elect", "lease_name", "lease_namespace", "kubeconfig")
        given = ["--" + f.replace("_", "-") for f in scheduler_flags if getattr(args, f) not in (None, [])]
        if given:
            raise CLIError(f"{', '.join(given)}: a legacy Policy has no such field; pass them as kube-scheduler flags")
        model = LegacyPolicy(extenders=(extender,))
    else:
        model = SchedulerConfigV1(
            extenders=(extender,),
            profiles=tuple(ProfileV1(n) for n in args.scheduler_name or [DEFAULT_SCHEDULER_NAME]),
            leader_election=_leader_election(args),
            kubeconfig=args.kubeconfig or "",
        )
    _report(validate(model), collect_warnings(model), "invalid extender configuration")
    fmt: Format = args.format or ("json" if args.legacy_policy else "yaml")
    doc = render_legacy_policy(model.extenders) if isinstance(model, LegacyPolicy) else render_config(model)
    text = dump(doc, fmt)
    if fmt == "yaml":
        # Said in the file too, where whoever deploys it will read it (JSON has no comments: stderr only).
        text = unreserved_note(model.extenders) + text
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as err:
            raise CLIError(f"-o {args.output}: {err.strerror or err}") from err
    else:
        sys.stdout.write(text)
    return 0


def _run_validate(file: str, release: Release) -> int:
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CLIError(f"{file}: cannot read: {getattr(err, 'strerror', None) or err}") from err
    doc, problems = read_text(text)
    if isinstance(doc, Mapping) and doc.get("kind") == LEGACY_KIND:
        return _validate_legacy(file, doc, problems)
    # A KubeSchedulerConfiguration: the one validator, as `scheduler run --config` uses it.
    base = Path.cwd() if file == "-" else Path(file).parent
    verdict = validate_text(text, PluginSource(), release=release, base=base)
    notes = [FieldError(u.path, u.message + " (`kubesched scheduler run` refuses it)") for u in verdict.unrunnable]
    model = read_document(doc)[0] if verdict.config is not None else None
    warnings = [*(collect_warnings(model) if model is not None else []), *verdict.warnings, *notes]
    _report(verdict.errors, warnings, f"{file} is invalid")
    print("ok")
    return 0


def _validate_legacy(file: str, doc: object, problems: list[FieldError]) -> int:
    """A pre-1.23 Policy file: kube-scheduler of those releases' rules (no release kubesched follows reads one)."""
    model, read_problems = read_document(doc)
    problems = [*problems, *read_problems]
    warnings: list[FieldError] = []
    if model is not None:
        # A field that failed to parse was left at its zero value; don't also report what that zero value breaks.
        bad = tuple(p.path for p in problems)
        problems += [e for e in validate(model) if not any(_within(e.path, b) for b in bad)]
        warnings = collect_warnings(model)
    _report(problems, warnings, f"{file} is invalid")
    print("ok")
    return 0


def _within(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _report(errors: Sequence[FieldError], warnings: Sequence[FieldError], headline: str) -> None:
    for w in warnings:
        print(f"kubesched: warning: {w}", file=sys.stderr)
    if errors:
        count = f"{len(errors)} problem" + ("s" if len(errors) != 1 else "")
        raise CLIError(f"{headline} ({count}):\n" + "\n".join(f"  {e}" for e in errors))


def _managed_resource(value: str) -> ManagedResource:
    name, sep, flag = value.partition("=")
    if not sep:
        return ManagedResource(name)
    if flag in ("ignored", "ignoredByScheduler"):
        return ManagedResource(name, ignored_by_scheduler=True)
    raise CLIError(f"--managed-resource {value!r}: expected NAME or NAME=ignored")


def _policy_resources(spec: str) -> tuple[ManagedResource, ...]:
    # Imported here: kubesched.policies is optional for everything else this command does.
    try:
        module = importlib.import_module("kubesched.policies")
    except ImportError as err:
        raise CLIError(f"--policy: kubesched.policies cannot be imported: {err}") from err
    load: Callable[[str], _PolicyLike] | None = getattr(module, "load", None)
    if load is None:
        raise CLIError("--policy: kubesched.policies.load is not available in this build")
    try:
        policy = load(spec)
    except (ValueError, LookupError, OSError) as err:
        raise CLIError(f"--policy {spec}: {err}") from err
    return tuple(ManagedResource(r.name, r.ignored_by_scheduler) for r in policy.managed_resources)


def _tls_config(args: argparse.Namespace) -> TLSConfig | None:
    files = {"ca": args.ca_file, "cert": args.cert_file, "key": args.key_file}
    if not (any(files.values()) or args.server_name or args.insecure):
        if args.embed_tls_data:
            raise CLIError("--embed-tls-data needs --ca-file, --cert-file or --key-file")
        return None
    if not args.embed_tls_data:
        return TLSConfig(
            insecure=args.insecure,
            server_name=args.server_name or "",
            ca_file=files["ca"] or "",
            cert_file=files["cert"] or "",
            key_file=files["key"] or "",
        )
    data = {kind: _read_pem(f"--{kind}-file", path) if path else b"" for kind, path in files.items()}
    return TLSConfig(
        insecure=args.insecure,
        server_name=args.server_name or "",
        ca_data=data["ca"],
        cert_data=data["cert"],
        key_data=data["key"],
    )


def _read_pem(flag: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise CLIError(f"{flag} {path}: {err.strerror or err}") from err


def _leader_election(args: argparse.Namespace) -> LeaderElectionV1 | None:
    if args.leader_elect is None and not args.lease_name and not args.lease_namespace:
        return None
    return LeaderElectionV1(
        leader_elect=True if args.leader_elect is None else bool(args.leader_elect),
        resource_name=args.lease_name or "",
        resource_namespace=args.lease_namespace or "",
    )
