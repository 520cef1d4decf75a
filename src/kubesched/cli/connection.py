"""The cluster flags every command that talks to a cluster shares, and the one loading rule behind them.

``--kubeconfig``, ``--context`` and ``--in-cluster`` mean the same everywhere (`scheduler run`, `extender serve`,
`webhook serve`, `snapshot`, `explain`); the rule itself is `kubesched.cluster.kubeconfig.connect`.
"""

from __future__ import annotations

import argparse

from kubesched.cluster.kubeconfig import Connection, KubeConfigError, connect, in_cluster
from kubesched.errors import CLIError

KUBECONFIG_HELP = "kubeconfig file (default: $KUBECONFIG, else in-cluster when in a pod, else ~/.kube/config)"


def add_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    kubeconfig: bool = True,
    in_cluster_flag: bool = True,
    what: str = "",
) -> None:
    """``--kubeconfig`` (unless the command adds its own), ``--context`` and ``--in-cluster``."""
    if kubeconfig:
        parser.add_argument("--kubeconfig", metavar="FILE", help=f"{what}{': ' if what else ''}{KUBECONFIG_HELP}")
    parser.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    if in_cluster_flag:
        parser.add_argument(
            "--in-cluster",
            action="store_true",
            help="only the pod's service account (KUBERNETES_SERVICE_HOST and its token), never a kubeconfig",
        )


def connection(args: argparse.Namespace, kubeconfig: str | None = None, otherwise: str = "") -> Connection:
    """The cluster of the command's flags: ``--in-cluster``, else the loading rule over ``kubeconfig`` (default:
    ``--kubeconfig``). ``otherwise``: what else the command accepts, added to the error (``--nodes FILE``)."""
    explicit = kubeconfig if kubeconfig is not None else getattr(args, "kubeconfig", None)
    forced = bool(getattr(args, "in_cluster", False))
    context = getattr(args, "context", None)
    if forced and explicit:
        raise CLIError("--in-cluster and --kubeconfig exclude each other")
    if forced and context:
        raise CLIError("--in-cluster and --context exclude each other (a context is a kubeconfig's)")
    try:
        return in_cluster() if forced else connect(explicit or None, context)
    except KubeConfigError as err:
        raise CLIError(f"{err}{f' ({otherwise})' if otherwise else ''}") from None
    except OSError as err:
        raise CLIError(str(err)) from None
