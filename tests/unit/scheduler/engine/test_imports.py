"""The scheduler engine runs any profile over any cluster: loading it loads no plugin, no API client, no httpx."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import kubesched.scheduler.engine

FORBIDDEN = ("kubesched.plugins", "kubesched.scheduler.remote", "kubesched.scheduler.profiles", "httpx")


def test_importing_every_engine_module_loads_no_plugin_no_remote_and_no_httpx() -> None:
    modules = [
        f"kubesched.scheduler.engine.{m.name}" for m in pkgutil.iter_modules(kubesched.scheduler.engine.__path__)
    ]
    assert "kubesched.scheduler.engine.scheduler" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] == 'httpx' or m.startswith({FORBIDDEN!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
