"""`kubesched manifests scheduler --config FILE --plugin-module FILE.py`: the user's scheduler config and plugins.

The config is checked as `kubesched scheduler run --config` checks it (fields, plugin names, args); its plugin
modules are imported only with --load-plugins (else their plugins' names and args are left to the scheduler). Then
each `file.py:Class` of its `pluginModules` is pointed at the mounted copy of the `--plugin-module` file it names.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kubesched.cli.scheduler_cmd import builder, config_problem, read_config
from kubesched.config.parse import load_text
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME
from kubesched.deploy import scheduler
from kubesched.deploy.plan import SchedulerPlan
from kubesched.errors import CLIError, ConfigurationError
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.profiles.manager import PluginSource


def scheduler_plan(args: argparse.Namespace, scheduler_name: str, namespace: str) -> SchedulerPlan:
    path: Path | None = args.config
    if path is None:
        if args.plugin_module:
            raise CLIError("--plugin-module: give --config FILE whose pluginModules names the file")
        return SchedulerPlan(scheduler_name)
    if not path.is_file():
        raise CLIError(f"--config: no such file {path}")
    try:
        # Without --load-plugins, pluginModules are not imported (their code would run here): the config is checked
        # as far as that allows, and the scheduler checks the rest when it starts.
        config, errors = read_config(path, live=True, plugins=PluginSource(import_modules=args.load_plugins))
        if errors:
            raise ConfigurationError(errors=errors)
        if args.load_plugins:
            builder(config, errors)(Handle)  # every profile built once: the plugins' own args checks
        doc = load_text(path.read_text(encoding="utf-8"))
    except ConfigurationError as err:
        raise config_problem(err, path) from None
    except (OSError, UnicodeDecodeError) as err:
        raise CLIError(f"--config: cannot read {path}: {err}") from None
    if not isinstance(doc, dict):  # read() above refused anything else already
        raise CLIError(f"--config {path}: not a KubeSchedulerConfiguration")
    if config.profiles_named and args.scheduler_name:
        names = ", ".join(p.scheduler_name for p in config.profiles)
        raise CLIError(f"--scheduler-name: --config {path} names its profiles ({names}); drop one of the two")
    for i, profile in enumerate(config.profiles if config.profiles_named else ()):
        if profile.scheduler_name == DEFAULT_SCHEDULER_NAME:
            raise CLIError(
                f"--config {path}: profiles[{i}].schedulerName: {DEFAULT_SCHEDULER_NAME!r} is the cluster's own "
                "kube-scheduler's: both would bind the same pods; name it differently"
            )
    if config.plugin_modules and not args.load_plugins:
        print(
            f"kubesched: note: --config {path}: pluginModules not imported: the plugins they define and their args "
            "are checked when the scheduler starts; --load-plugins imports them here (their code runs) to check now",
            file=sys.stderr,
        )
    _check_lease(doc, path, namespace)
    files, modules = _plugin_files(doc.get("pluginModules") or [], path, args.plugin_module)
    if modules:
        doc["pluginModules"] = modules
    return SchedulerPlan(scheduler_name, config=doc, plugin_files=files)


def _check_lease(doc: dict[str, Any], path: Path, namespace: str) -> None:
    """The Role grants the scheduler one Lease, NS/kubesched-scheduler, which the deployed config names (filled in
    by the renderer); a user's other Lease would never be granted, so it is replaced, and said so."""
    election = doc.get("leaderElection") or {}
    if not isinstance(election, dict):
        return  # the config check above refused it already
    wanted = {"resourceName": scheduler.SCHEDULER, "resourceNamespace": namespace}
    for key, value in wanted.items():
        if election.get(key) not in (None, "", value):
            print(
                f"kubesched: note: --config {path}: leaderElection.{key} {election[key]!r} is deployed as {value!r}: "
                f"the manifests grant the Lease {namespace}/{scheduler.SCHEDULER} only",
                file=sys.stderr,
            )


def _plugin_files(modules: list[str], config: Path, given: list[Path]) -> tuple[dict[str, str], list[str]]:
    """The files to ship (by name) and pluginModules pointing at their mounted copies."""
    by_path: dict[Path, Path] = {}
    for file in given:
        if file.suffix != ".py":
            raise CLIError(f"--plugin-module {file}: expected a Python file (FILE.py)")
        if not file.is_file():
            raise CLIError(f"--plugin-module: no such file {file}")
        clash = [p for p in by_path.values() if p.name == file.name and p.resolve() != file.resolve()]
        if clash:
            raise CLIError(f"--plugin-module {file}: another file of the same name is given ({clash[0]})")
        by_path[file.resolve()] = file
    files: dict[str, str] = {}
    out: list[str] = []
    used: set[Path] = set()
    for i, spec in enumerate(modules):
        target, _, attr = spec.rpartition(":")
        if not target.endswith(".py"):
            out.append(spec)  # pkg.mod:Class: installed in the image
            continue
        resolved = (config.parent / target).resolve()
        found = by_path.get(resolved)
        if found is None:
            raise CLIError(
                f"--config {config}: pluginModules[{i}]: {target} is a file: ship it with --plugin-module {resolved}"
            )
        try:
            files[found.name] = found.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise CLIError(f"--plugin-module: cannot read {found}: {err}") from None
        used.add(resolved)
        out.append(f"{scheduler.PLUGINS_DIR}/{found.name}:{attr}")
    unused = [str(f) for p, f in by_path.items() if p not in used]
    if unused:
        raise CLIError(f"--plugin-module {unused[0]}: not named by the pluginModules of --config {config}")
    return files, out
