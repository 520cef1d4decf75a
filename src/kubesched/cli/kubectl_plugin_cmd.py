"""`kubesched kubectl-plugin`: install `kubectl-kubesched`, so that `kubectl kubesched explain POD` works.

kubectl runs any executable named ``kubectl-<name>`` on PATH as ``kubectl <name>``; the one written here
runs this kubesched (the Python that runs this command) with the same arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kubesched.errors import CLIError

NAME = "kubectl-kubesched"
MARK = "# written by `kubesched kubectl-plugin`"
EPILOG = """\
Examples:
  kubesched kubectl-plugin                      # writes ~/.local/bin/kubectl-kubesched
  kubectl kubesched explain web-0 -n shop       # then, as a kubectl plugin
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser(
        "kubectl-plugin",
        help="install kubectl-kubesched: `kubectl kubesched explain POD -n NS`",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("--dir", type=Path, default=Path.home() / ".local" / "bin", help="where (default ~/.local/bin)")
    cmd.add_argument("--force", action="store_true", help="replace a kubectl-kubesched not written by this command")
    cmd.set_defaults(func=run)


def script() -> str:
    return f'#!/bin/sh\n{MARK}\nexec "{sys.executable}" -m kubesched "$@"\n'


def run(args: argparse.Namespace) -> int:
    target = args.dir / NAME
    if target.exists() and MARK not in target.read_text(errors="replace") and not args.force:
        raise CLIError(f"{target} exists and was not written by kubesched (--force replaces it)")
    try:
        args.dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{NAME}.tmp")
        tmp.write_text(script())
        tmp.chmod(0o755)
        tmp.replace(target)
    except OSError as err:
        raise CLIError(f"--dir: {err}") from None
    on_path = str(args.dir.resolve()) in [
        str(Path(p).resolve()) for p in os.environ.get("PATH", "").split(os.pathsep) if p
    ]
    print(f"{target}: `kubectl kubesched explain POD -n NS` now runs `kubesched explain`")
    if not on_path:
        print(f"note: {args.dir} is not on PATH; add it, or kubectl will not find the plugin", file=sys.stderr)
    return 0
