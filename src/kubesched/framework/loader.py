"""Loading a user's Python object by name: ``package.module:attr`` or ``path/to/file.py[:attr]``.

Policies, scheduler plugins and webhook rules are all loaded through here.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from kubesched.errors import PluginError


class LoadError(PluginError, ValueError):
    """The object cannot be loaded; the message says what was tried and why it failed."""


def load_object(spec: str, *, default_attr: str | None = None, base: Path | None = None, fresh: bool = False) -> object:
    """The object ``spec`` names.

    ``default_attr`` is used when the spec has no ``:attr``; a relative file path is taken from
    ``base`` (the current directory otherwise); with ``fresh``, a file is imported again whenever
    it changed (hot reload), else once per path.
    """
    target, sep, attr = spec.rpartition(":")
    if not sep:
        target, attr = spec, default_attr or ""
    if not target or not attr:
        raise LoadError(f"{spec}: expected package.module:attr or path/to/file.py:attr")
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
