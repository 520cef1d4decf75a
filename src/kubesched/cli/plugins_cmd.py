"""`kubesched plugins list`: every plugin a scheduler configuration can name, its extension points and source."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kubesched.cli import tables
from kubesched.config.profiles import load_file
from kubesched.errors import CLIError, ConfigurationError
from kubesched.scheduler.profiles.manager import describe, load_registry

PLUGINS_FROM = ("files", "image")


def add_plugins_from_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """--plugins-from: whether ``what`` (a config's pluginModules, a policy, python rules) may name files."""
    parser.add_argument(
        "--plugins-from",
        choices=PLUGINS_FROM,
        default="files",
        help=f"image: {what} load only from what is installed (built-ins, entry points, modules of installed "
        "packages), never a .py file, which is refused; files (default): also .py files and any importable module. "
        "The rendered manifests use image unless they ship plugin files (docs/security.md)",
    )


def image_only(args: argparse.Namespace | None) -> bool:
    """--plugins-from image (commands without the flag load as files)."""
    return getattr(args, "plugins_from", "files") == "image"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plugins = sub.add_parser("plugins", help="scheduling plugins")
    plugins_sub = plugins.add_subparsers(dest="plugins_command", required=True, metavar="COMMAND")
    ls = plugins_sub.add_parser(
        "list", help="built-in plugins, entry points (group kubesched.plugins) and a configuration's pluginModules"
    )
    ls.add_argument("--config", type=Path, help="also load this KubeSchedulerConfiguration's pluginModules")
    ls.add_argument("-o", "--output", choices=("text", "json"), default="text")
    ls.set_defaults(func=run_list)


def run_list(args: argparse.Namespace) -> int:
    modules: tuple[str, ...] = ()
    if args.config is not None:
        try:
            modules = load_file(args.config).plugin_modules
        except ConfigurationError as err:
            raise CLIError(f"{args.config}: " + "; ".join(str(e) for e in err.errors)) from None
    registry, errors = load_registry(modules)
    rows = describe(registry)
    if args.output == "json":
        print(json.dumps({"plugins": rows, "errors": [str(e) for e in errors]}, indent=2))
    elif not tables.table(
        ("NAME", "EXTENSION POINTS", "SOURCE"),
        [(r["name"], ", ".join(r["extensionPoints"]), r["source"]) for r in rows],
    ):
        width = max(len(r["name"]) for r in rows)
        points_width = max(len(", ".join(r["extensionPoints"])) for r in rows)
        print(f"{'NAME':<{width}}  {'EXTENSION POINTS':<{points_width}}  SOURCE")
        for r in rows:
            print(f"{r['name']:<{width}}  {', '.join(r['extensionPoints']):<{points_width}}  {r['source']}")
    if args.output != "json":
        for e in errors:
            print(f"error: {e}")
    return 1 if errors else 0
