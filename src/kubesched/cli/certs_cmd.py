"""`kubesched certs`: a CA and the serving certificate of the webhook's (or the extender's) Service (and extra IPs /
names); with `--client CN`, a client certificate from the same CA (kube-scheduler's, to call a binding extender)."""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import re
from pathlib import Path

from kubesched import pki
from kubesched.errors import CLIError

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
FILES = ("ca.crt", "tls.crt", "tls.key")
CLIENT_FILES = ("client.crt", "client.key")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    certs = sub.add_parser("certs", help="write a CA and a serving certificate for the webhook's Service")
    certs.add_argument("--out", type=Path, required=True, help="directory for ca.crt, tls.crt, tls.key")
    certs.add_argument("--service", required=True, help="the webhook's Service name")
    certs.add_argument("--namespace", required=True, help="the Service's namespace")
    certs.add_argument("--ip", action="append", default=[], help="an extra IP SAN (repeatable), e.g. 127.0.0.1")
    certs.add_argument("--dns", action="append", default=[], help="an extra DNS SAN (repeatable)")
    certs.add_argument(
        "--client",
        metavar="CN",
        help="also write client.crt and client.key, a client certificate with this CN signed by the same CA (for the "
        "extender: --service kubesched-extender --client kube-scheduler; see docs/extender.md)",
    )
    certs.add_argument("--days", type=int, default=365, help="validity in days (default 365)")
    certs.add_argument("--force", action="store_true", help="overwrite existing files")
    certs.set_defaults(func=run_certs)


def service_names(service: str, namespace: str) -> list[str]:
    """The names a Service is called by from inside the cluster."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def run_certs(args: argparse.Namespace) -> int:
    for flag, value in (("--service", args.service), ("--namespace", args.namespace)):
        if not _DNS_LABEL.match(value):
            raise CLIError(f"{flag}: {value!r} is not a DNS label (lower-case letters, digits, '-', at most 63)")
    for ip in args.ip:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise CLIError(f"--ip: {ip!r} is not an IP address") from None
    if args.days <= 0:
        raise CLIError("--days: must be positive")
    if args.client is not None and not 0 < len(args.client) <= 64:
        raise CLIError(f"--client: {args.client!r}: a CN holds 1-64 characters")
    written = FILES + (CLIENT_FILES if args.client else ())
    existing = [name for name in written if (args.out / name).exists()]
    if existing and not args.force:
        raise CLIError(f"{args.out}: {', '.join(existing)} exist already (--force overwrites them)")
    valid_for = dt.timedelta(days=args.days)
    common_name = f"{args.service}.{args.namespace}.svc"
    ca = pki.new_ca(f"{common_name} webhook CA", valid_for=valid_for)
    dns_names = list(dict.fromkeys([*service_names(args.service, args.namespace), *args.dns]))
    serving = pki.serving_cert(ca, common_name, dns_names=dns_names, ip_addresses=args.ip, valid_for=valid_for)
    # The CA key is never written: it signed its one certificate, and a key that does not exist cannot leak.
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ca.crt").write_bytes(ca.cert_pem)
    serving.write(args.out / "tls.crt", args.out / "tls.key")
    if args.client:
        pki.client_cert(ca, args.client, valid_for=valid_for).write(args.out / "client.crt", args.out / "client.key")
    for name in written:
        print(args.out / name)
    return 0
