"""The import contract that keeps plugins independent names every plugin module (a new one cannot slip out)."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import kubesched.plugins

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def test_the_independence_contract_lists_every_plugin_module_and_no_helper() -> None:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    (independence,) = [c for c in contracts if c["type"] == "independence" and c["name"].startswith("Plugins")]
    modules = {f"kubesched.plugins.{m.name}" for m in pkgutil.iter_modules(kubesched.plugins.__path__) if not m.ispkg}
    assert set(independence["modules"]) == modules
