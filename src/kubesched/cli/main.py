"""The `kubesched` console script: the one place that wires the packages together."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kubesched.cli import (
    certs_cmd,
    config_cmd,
    dev_cluster,
    extender_cmd,
    manifests_cmd,
    plugins_cmd,
    scheduler_cmd,
    webhook_cmd,
)
from kubesched.cli.errors import CLIError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubesched", description="Kubernetes scheduling in Python.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    extender_cmd.register(sub)
    config_cmd.register(sub)
    dev_cluster.register(sub)
    scheduler_cmd.register(sub)
    plugins_cmd.register(sub)
    webhook_cmd.register(sub)
    certs_cmd.register(sub)
    manifests_cmd.register(sub)
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
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
