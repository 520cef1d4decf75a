"""Loading a user's Python object by name: ``package.module:attr`` or ``path/to/file.py[:attr]``.

Policies, scheduler plugins and webhook rules are all loaded through here. Loading runs the code named: with
``installed_only`` (the commands' ``--plugins-from image``) only modules of installed distributions are imported,
never a file nor a module found elsewhere on sys.path (docs/security.md).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

from kubesched.errors import PluginError


class LoadError(PluginError, ValueError):
    """The object cannot be loaded; the message says what was tried and why it failed."""


IMAGE_ONLY = (
    "refused by --plugins-from image: only code installed in the image loads (built-ins, entry points, modules of "
    "installed packages); install it in the image, or start with --plugins-from files (docs/security.md)"
)


def not_installed(spec: str) -> str | None:
    """Why --plugins-from image refuses ``spec`` (None: it names a module of an installed distribution); imports
    nothing."""
    target = spec.rpartition(":")[0] or spec
    if target.endswith(".py"):
        return f"{target} is a file: {IMAGE_ONLY}"
    top = target.partition(".")[0]
    if top != "kubesched" and top not in importlib.metadata.packages_distributions():
        return f"{top} is no module of an installed package: {IMAGE_ONLY}"
    return None


def load_object(
    spec: str,
    *,
    default_attr: str | None = None,
    base: Path | None = None,
    fresh: bool = False,
    installed_only: bool = False,
) -> object:
    """The object ``spec`` names.

    ``default_attr`` is used when the spec has no ``:attr``; a relative file path is taken from
    ``base`` (the current directory otherwise); with ``fresh``, a file is imported again whenever
    it changed (hot reload), else once per path; with ``installed_only``, LoadError unless `not_installed`
    accepts it, before anything is imported.
    """
    target, sep, attr = spec.rpartition(":")
    if not sep:
        target, attr = spec, default_attr or ""
    if not target or not attr:
        raise LoadError(f"{spec}: expected package.module:attr or path/to/file.py:attr")
    refused = not_installed(target) if installed_only else None
    if refused is not None:
        raise LoadError(f"{spec}: {refused}")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise LoadError(f"{spec}: no such file {path}")
        path = path.resolve()
        identity = f"{path}:{path.stat().st_mtime_ns}:{path.stat().st_size}" if fresh else str(path)
        name = f"kubesched_user_{hashlib.sha1(identity.encode()).hexdigest()[:12]}"
        module = sys.modules.get(name)
        if module is None:
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise LoadError(f"{spec}: cannot load {path} as a Python module")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module  # dataclasses and pickling look modules up by name
            try:
                module_spec.loader.exec_module(module)
            except Exception as err:
                del sys.modules[name]
                raise LoadError(f"{spec}: importing {path} failed: {type(err).__name__}: {err}") from err
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as err:
            raise LoadError(f"{spec}: cannot import {target}: {err}") from err
        except Exception as err:  # the module itself failed while importing
            raise LoadError(f"{spec}: importing {target} failed: {type(err).__name__}: {err}") from err
    if not hasattr(module, attr):
        raise LoadError(f"{spec}: {target} has no attribute {attr!r}")
    return getattr(module, attr)
