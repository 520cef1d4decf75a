"""`kubesched manifests`: render what a cluster needs (see docs/deploy.md).

This module reads the inputs (policy, webhook config, certificates) with the packages that own them and hands
`kubesched.deploy` a plain `Plan`; the rendering itself is pure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import yaml

from kubesched import pki
from kubesched.cli import kube_version, manifests_extender
from kubesched.cli.certs_cmd import service_names
from kubesched.cli.manifests_scheduler import scheduler_plan
from kubesched.cli.webhook_cmd import managed_resources
from kubesched.cluster.cache import ClusterCache
from kubesched.deploy import extender, helm_values, render, scheduler, webhook
from kubesched.deploy.plan import (
    DEFAULT_EXCLUDED,
    DEFAULT_EXTENDER_SCHEDULER_NAME,
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    DEFAULT_POLICY,
    DEFAULT_SCHEDULER_NAME,
    DEFAULT_WEBHOOK_TIMEOUT,
    FAIL_CLOSED_LABEL,
    KUBE_SCHEDULER_IMAGE,
    DeployError,
    Plan,
    WebhookPlan,
    WebhookRules,
    WebhookTLS,
)
from kubesched.errors import CLIError
from kubesched.webhook import rules_file as webhook_config
from kubesched.webhook.feasibility import Feasibility
from kubesched.webhook.rules import PythonRule, RequireLabel

MODES = ("extender", "scheduler", "webhook", "all")
# Plan fields (as DeployError names them) -> the option a user changes.
_OPTIONS = {
    "namespace": "--namespace",
    "image": "--image",
    "kube_scheduler_image": "--kube-scheduler-image",
    "scheduler.scheduler_name": "--scheduler-name",
    "extender.scheduler_name": "--extender-scheduler-name",
    "extender": "--policy",
    "policy_files": "--policy",
    "timeout_seconds": "--webhook-timeout",
    "exclude_namespaces": "--exclude-namespace",
    "fail_closed_label": "--fail-closed-label",
    "rules": "--webhook-config",
    "rules.files": "--webhook-config",
    "plugin_files": "--plugin-module",
    "tls": "--certs-dir",
    "extender.tls": "--extender-certs-dir",
    "plan": "MODE",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "manifests",
        help="render the Kubernetes objects that deploy kubesched",
        description="Render Deployments, Services, ConfigMaps, RBAC and webhook configurations as YAML: "
        "one stream on stdout, or one file per object with -o DIR.",
    )
    p.add_argument("mode", choices=MODES, metavar="MODE", help=f"what to deploy: {', '.join(MODES)}")
    p.add_argument(
        "--namespace", metavar="NS", default=DEFAULT_NAMESPACE, help="namespace of everything (default: %(default)s)"
    )
    p.add_argument("--image", default=DEFAULT_IMAGE, help="the kubesched image (default: %(default)s)")
    p.add_argument(
        "--kube-scheduler-image",
        metavar="IMAGE",
        help=f"the second kube-scheduler's image (default: --kubernetes-version's, {KUBE_SCHEDULER_IMAGE})",
    )
    kube_version.add_flag(p)
    p.add_argument(
        "--load-plugins",
        action="store_true",
        help="import the user's code (policy, pluginModules, python rules) here to check it all: it runs on this "
        "machine. Without it only what needs no import is checked; a policy other than a built-in needs it",
    )
    p.add_argument(
        "--scheduler-name", metavar="NAME", help="schedulerName of the scheduler MODE deploys (default per mode)"
    )
    ext = p.add_argument_group("extender (extender, all)")
    ext.add_argument(
        "--policy",
        metavar="P",
        help=f"built-in name, path/to/policy.py[:attr], pkg.mod:attr (default {DEFAULT_POLICY})",
    )
    ext.add_argument("--bind", action="store_true", help="the extender binds pods (bindVerb; RBAC pods/binding)")
    ext.add_argument(
        "--extender-scheduler-name",
        metavar="NAME",
        help=f"schedulerName of the second kube-scheduler ({DEFAULT_EXTENDER_SCHEDULER_NAME})",
    )
    manifests_extender.add_flags(ext)
    sch = p.add_argument_group("scheduler (scheduler, all)")
    sch.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="the scheduler's KubeSchedulerConfiguration (profiles, pluginConfig, pluginModules)",
    )
    sch.add_argument(
        "--plugin-module",
        metavar="FILE.py",
        type=Path,
        action="append",
        default=[],
        help="a plugin file the config's pluginModules names: shipped in a ConfigMap (repeat)",
    )
    hook = p.add_argument_group("webhook (webhook, all)")
    hook.add_argument(
        "--webhook-config", metavar="FILE", type=Path, help="the webhook's rules (default: warn on pods that never fit)"
    )
    certs = hook.add_mutually_exclusive_group()
    certs.add_argument("--certs-dir", metavar="DIR", type=Path, help="ca.crt, tls.crt, tls.key made by kubesched certs")
    certs.add_argument(
        "--generate-certs", action="store_true",
        help="make a new CA and serving certificate (the webhook's; with --bind the extender's and kube-scheduler's)",
    )  # fmt: skip
    hook.add_argument(
        "--cert-days", metavar="N", type=int, default=365, help="validity of generated certificates (default 365)"
    )
    hook.add_argument(
        "--exclude-namespace", metavar="NS", action="append", default=[],
        help="never judge pods here (repeat; replaces the default, " + ", ".join(DEFAULT_EXCLUDED)
        + "; kube-system and --namespace always)",
    )  # fmt: skip
    hook.add_argument(
        "--fail-closed-label", metavar="KEY=VALUE", default="=".join(FAIL_CLOSED_LABEL),
        help="failurePolicy Fail holds only in namespaces with this label; elsewhere the rules fail open "
        "(default %(default)s)",
    )  # fmt: skip
    hook.add_argument("--validating-failure-policy", choices=("Fail", "Ignore"), help="default: Fail if a rule denies")
    hook.add_argument(
        "--webhook-timeout", metavar="N", type=int, default=DEFAULT_WEBHOOK_TIMEOUT, help="seconds, 1-30 (default 5)"
    )
    hook.add_argument(
        "--webhook-managed-resource", metavar="NAME", action="append", default=[],
        help="webhook serve --managed-resource NAME: per-node gauges of this resource (repeat); adds pods list/watch",
    )  # fmt: skip
    out = p.add_argument_group("output")
    out.add_argument("-o", "--output", type=Path, metavar="DIR", help="one file per object into DIR")
    out.add_argument("--kustomize", action="store_true", help="write a kustomize base into DIR (certs from files)")
    out.add_argument(
        "--helm-values",
        action="store_true",
        help="print the values of the Helm chart deploy/helm/kubesched that render the same objects",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    kube_version.release(args)  # an unsupported --kubernetes-version stops here, whatever the mode
    if args.helm_values and (args.output is not None or args.kustomize):
        raise CLIError("--helm-values: prints the values on stdout; drop -o/--kustomize")
    plan = build_plan(args)
    _note_code_in_config_maps(plan)
    try:
        objects = render.render(plan)
        if args.helm_values:
            values = helm_values.values(plan, generate_certs=args.generate_certs, cert_days=args.cert_days)
            install = f"helm install kubesched deploy/helm/kubesched --namespace {args.namespace} --create-namespace"
            sys.stdout.write(f"# {install} -f FILE\n" + render.to_yaml(values))
            if plan.webhook is not None and not args.generate_certs:
                print(
                    "kubesched: note: the values hold the webhook's private key (webhook.certificates.key)",
                    file=sys.stderr,
                )
            if plan.extender is not None and plan.extender.tls is not None and not args.generate_certs:
                print(
                    "kubesched: note: the values hold the extender's and kube-scheduler's private keys "
                    "(extender.certificates.key, .clientKey)",
                    file=sys.stderr,
                )
            return 0
        files = render.kustomize_base(plan) if args.kustomize else render.files(objects)
    except DeployError as err:
        raise CLIError(_problems(err, args.mode)) from None
    if args.output is None:
        sys.stdout.write(render.stream(objects))
    else:
        # A Secret's file holds the webhook's private key: readable by its owner only, as `kubesched certs` writes it.
        secrets = {n for n, o in zip(render.file_names(objects), objects, strict=True) if o["kind"] == "Secret"}
        _write(args.output, files, private=secrets)
    if args.generate_certs:
        ext_keys = f"{extender.TLS_SECRET}, {extender.CLIENT_SECRET}"
        keys = [n for n, on in (("kubesched-webhook-tls", plan.webhook), (ext_keys, plan.extender)) if on]
        print(f"kubesched: note: the output holds private keys (Secrets {', '.join(keys)})", file=sys.stderr)
    return 0


def _note_code_in_config_maps(plan: Plan) -> None:
    """Shipped code runs --plugins-from files: whoever may edit its ConfigMap runs code as that ServiceAccount."""
    shipped = [
        (scheduler.PLUGINS, scheduler.SCHEDULER, bool(plan.scheduler and plan.scheduler.plugin_files)),
        (f"{extender.EXTENDER}-policy", extender.EXTENDER, bool(plan.extender and plan.extender.policy_files)),
        (webhook.CONFIG_MAP, webhook.WEBHOOK, bool(plan.webhook and plan.webhook.rules.files)),
    ]
    for config_map, account, ships in shipped:
        if ships:
            print(
                f"kubesched: note: ConfigMap {plan.namespace}/{config_map} holds Python code run as ServiceAccount "
                f"{account} (--plugins-from files): who may edit it runs code with those rights; see docs/security.md",
                file=sys.stderr,
            )


def _problems(err: DeployError, mode: str) -> str:
    lines = [f"  {_OPTIONS.get(f, f)}: {m}" for f, m in err.problems]
    if mode == "extender":  # one scheduler there, named by either option
        lines = [line.replace("--extender-scheduler-name:", "--scheduler-name:") for line in lines]
    return "cannot render the manifests:\n" + "\n".join(lines)


def build_plan(args: argparse.Namespace) -> Plan:
    mode = args.mode
    wants_extender, wants_scheduler, wants_webhook = (mode in (m, "all") for m in ("extender", "scheduler", "webhook"))
    _refuse(args, "--policy", args.policy is not None, wants_extender)
    _refuse(args, "--bind", args.bind, wants_extender)
    _refuse(args, "--watch-pods", args.watch_pods != "auto", wants_extender)
    _refuse(args, "--extender-certs-dir", args.extender_certs_dir is not None, wants_extender and args.bind)
    _refuse(args, "--extender-scheduler-name", args.extender_scheduler_name is not None, mode != "scheduler")
    _refuse(args, "--config", args.config is not None, wants_scheduler)
    _refuse(args, "--plugin-module", bool(args.plugin_module), wants_scheduler)
    for flag, given in (
        ("--webhook-config", args.webhook_config is not None),
        ("--certs-dir", args.certs_dir is not None),
        ("--exclude-namespace", bool(args.exclude_namespace)),
        ("--fail-closed-label", args.fail_closed_label != "=".join(FAIL_CLOSED_LABEL)),
        ("--validating-failure-policy", args.validating_failure_policy is not None),
        ("--webhook-managed-resource", bool(args.webhook_managed_resource)),
    ):
        _refuse(args, flag, given, wants_webhook)
    _refuse(args, "--generate-certs", args.generate_certs, wants_webhook or (wants_extender and args.bind))
    if args.kustomize and args.output is None:
        raise CLIError("--kustomize: give the directory with -o DIR")
    if args.kustomize and (args.certs_dir or args.generate_certs or args.extender_certs_dir):
        raise CLIError(
            "--kustomize: the base makes the Secrets from DIR/certs/ (and DIR/extender-certs/); drop "
            "--certs-dir/--extender-certs-dir/--generate-certs"
        )
    if wants_webhook and not args.kustomize and not (args.certs_dir or args.generate_certs):
        raise CLIError(
            "the webhook needs a serving certificate: --certs-dir DIR (see kubesched certs) or --generate-certs"
        )
    names = _scheduler_names(args)
    ext = manifests_extender.extender_plan(args, names["extender"]) if wants_extender else None
    sched = scheduler_plan(args, names["scheduler"], args.namespace) if wants_scheduler else None
    hook = None
    if wants_webhook:
        # The default rules judge pods of the schedulers deployed beside the webhook (or named on the command line).
        ours = [*sched.scheduler_names, names["extender"]] if sched else [names["scheduler"]]
        if mode == "webhook" and args.extender_scheduler_name:
            ours.append(args.extender_scheduler_name)
        hook = WebhookPlan(
            rules=_webhook_rules(args.webhook_config, ours, args.load_plugins),
            tls=None if args.kustomize else _tls(args),
            exclude_namespaces=tuple(args.exclude_namespace or DEFAULT_EXCLUDED),
            fail_closed_label=_label(args.fail_closed_label),
            validating_failure_policy=args.validating_failure_policy,
            timeout_seconds=args.webhook_timeout,
            managed_resources=tuple(managed_resources(args.webhook_managed_resource, "--webhook-managed-resource")),
        )
    return Plan(namespace=args.namespace, image=args.image, extender=ext, scheduler=sched, webhook=hook)


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise CLIError(f"--fail-closed-label: {text!r} is not KEY=VALUE")
    return key, value


def _refuse(args: argparse.Namespace, flag: str, given: bool, applies: bool) -> None:
    if given and not applies:
        raise CLIError(f"{flag}: does not apply to mode {args.mode}")


def _scheduler_names(args: argparse.Namespace) -> dict[str, str]:
    """schedulerNames: --scheduler-name names the scheduler of the mode (in all: ours, beside the extender's)."""
    if args.mode == "extender":
        given = {n for n in (args.scheduler_name, args.extender_scheduler_name) if n}
        if len(given) > 1:
            raise CLIError("--scheduler-name and --extender-scheduler-name: extender mode has one scheduler; give one")
        return {"scheduler": "", "extender": given.pop() if given else DEFAULT_EXTENDER_SCHEDULER_NAME}
    return {
        "scheduler": args.scheduler_name or DEFAULT_SCHEDULER_NAME,
        "extender": args.extender_scheduler_name or DEFAULT_EXTENDER_SCHEDULER_NAME,
    }


def _webhook_rules(path: Path | None, scheduler_names: list[str], load_plugins: bool = False) -> WebhookRules:
    """Check the config with the webhook's own parser (python rules imported only with ``load_plugins``), then note
    what the manifests depend on."""
    if path is None:
        text, base, source = render.to_yaml(webhook.default_config(scheduler_names)), Path.cwd(), "default config"
    else:
        text, base, source = _read(path, "--webhook-config"), path.parent, f"--webhook-config {path}"
    try:
        python: webhook_config.PythonLoading = "any" if load_plugins else "none"
        config = webhook_config.parse(yaml.safe_load(text), ClusterCache(), base=base, source=source, python=python)
    except yaml.YAMLError as err:
        raise CLIError(f"{source}: not valid YAML: {err}") from None
    except webhook_config.WebhookConfigError as err:
        raise CLIError(str(err)) from None
    files: dict[str, str] = {}
    can_deny, scope, scoped = False, set[str](), True
    for rule in config.rules:
        if rule.phase != "validate":
            continue
        if isinstance(rule, RequireLabel):
            can_deny |= rule.action == "deny"
            scope.add(rule.scheduler_name)
        elif isinstance(rule, Feasibility):
            can_deny |= rule.action == "deny"
            scope |= rule.scheduler_names
            scoped &= bool(rule.scheduler_names)
        else:  # python and anything new: assume it can deny any pod
            can_deny, scoped = True, False
    for rule in config.rules:
        if isinstance(rule, PythonRule):
            module = rule.target.rpartition(":")[0]
            if module.endswith(".py"):
                if Path(module).name != module:
                    raise CLIError(f"{source}: rule {rule.name}: {module} must sit beside the config file")
                files[module] = _read(base / module, source)
    unimported = [r.name for r in config.rules if isinstance(r, PythonRule)] if not load_plugins else []
    if unimported:
        print(
            f"kubesched: note: {source}: python rules not imported ({', '.join(unimported)}): their code is checked "
            "when the webhook starts; --load-plugins imports them here",
            file=sys.stderr,
        )
    return WebhookRules(
        config_yaml=text,
        operations=tuple(op for op in webhook_config.OPERATIONS if op in config.operations),
        mutates=any(r.phase == "mutate" for r in config.rules),
        validates=any(r.phase == "validate" for r in config.rules),
        can_deny=can_deny,
        scheduler_scope=tuple(sorted(scope)) if scoped else None,
        needs_nodes=config.needs_nodes,
        files=files,
    )


def _tls(args: argparse.Namespace) -> WebhookTLS:
    if args.generate_certs:
        if args.cert_days <= 0:
            raise CLIError("--cert-days: must be positive")
        valid_for = dt.timedelta(days=args.cert_days)
        # A CN holds 64 characters at most; TLS clients check the DNS names, so a long one is simply shortened.
        common_name = webhook.dns_name(args.namespace)[:64]
        ca = pki.new_ca("kubesched webhook CA", valid_for=valid_for)
        names = service_names(webhook.WEBHOOK, args.namespace)
        serving = pki.serving_cert(ca, common_name, dns_names=names, valid_for=valid_for)
        return WebhookTLS(ca.cert_pem, serving.cert_pem, serving.key_pem)
    directory: Path = args.certs_dir
    pems = [_read_bytes(directory / name, "--certs-dir") for name in ("ca.crt", "tls.crt", "tls.key")]
    return WebhookTLS(*pems)


def _read(path: Path, flag: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CLIError(f"{flag}: cannot read {path}: {getattr(err, 'strerror', None) or err}") from None


def _read_bytes(path: Path, flag: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise CLIError(f"{flag}: cannot read {path}: {err.strerror or err}") from None


def _write(directory: Path, files: dict[str, str], private: set[str]) -> None:
    """The files into `directory`; those named in `private` with mode 0600 (also when they were there before)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        stale = sorted(p.name for p in directory.glob("*.yaml") if p.name not in files)
        for name, text in files.items():
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            if name in private:
                pki.write_private(directory / name, text.encode())
            else:
                (directory / name).write_text(text, encoding="utf-8")
    except OSError as err:
        raise CLIError(f"-o {directory}: {err.strerror or err}") from None
    for name in stale:
        # Never deleted for you, but `kubectl apply -f DIR` would apply them.
        print(f"kubesched: warning: {directory / name} was not rendered now; delete it if it is stale", file=sys.stderr)
    for name in files:
        print(directory / name)
