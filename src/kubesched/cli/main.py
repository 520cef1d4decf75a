"""The `kubesched` console script: the one place that wires the packages together."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from kubesched.cli import (
    certs_cmd,
    config_cmd,
    dev_cluster,
    explain_cmd,
    extender_cmd,
    helptext,
    kubectl_plugin_cmd,
    manifests_cmd,
    plugins_cmd,
    scheduler_cmd,
    simulate_cmd,
    snapshot_cmd,
    webhook_cmd,
)
from kubesched.errors import CLIError
from kubesched.versions import KUBERNETES_VERSION, SUPPORTED

# What a shell reports for a program killed by SIGPIPE (kubectl's habit when `| head` closes the pipe).
EXIT_BROKEN_PIPE = 141


def version() -> str:
    try:
        own = metadata.version("kubesched")
    except metadata.PackageNotFoundError:
        own = "unknown"
    also = ", ".join(f"v{v}" for v in SUPPORTED if v != KUBERNETES_VERSION)
    return f"kubesched {own} (Kubernetes reference v{KUBERNETES_VERSION}; also supported: {also})"


EXAMPLES = """\
Examples:
  kubesched scheduler run --cluster examples/cluster.yaml      # schedule a cluster file in memory
  kubesched snapshot -o cluster.yaml                           # a live cluster as a cluster file
  kubesched extender serve --policy custom-label --nodes examples/nodes.yaml
  kubesched plugins list
  kubesched COMMAND --help                                     # each command's flags and examples
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubesched",
        description="Kubernetes scheduling in Python: extender, custom scheduler, admission webhook, deployment.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    extender_cmd.register(sub)
    config_cmd.register(sub)
    dev_cluster.register(sub)
    scheduler_cmd.register(sub)
    snapshot_cmd.register(sub)
    explain_cmd.register(sub)
    kubectl_plugin_cmd.register(sub)
    simulate_cmd.register(sub)
    plugins_cmd.register(sub)
    webhook_cmd.register(sub)
    certs_cmd.register(sub)
    manifests_cmd.register(sub)
    helptext.apply(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except CLIError as err:
        print(f"kubesched: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    try:
        sys.stdout.flush()  # the last buffered write may be the one that meets the closed pipe
    except BrokenPipeError:
        return _closed_pipe()
    return int(code or 0)


def _closed_pipe() -> int:
    """The reader went away (`… | head`): end quietly; no traceback, no second error at interpreter exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
