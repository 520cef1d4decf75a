"""The engine only puts the extension points in order: no module of scheduler/engine loops over plugins.

The framework (`kubesched.framework.runtime.Framework`) runs every point; a loop in the engine over a
framework's per-point lists (``fw.reserve``, ``profile.framework.pre_bind``, ``fw.plugins``, …) is a
plugin call that bypasses its guard, timer and observer. Found by reading the engine's syntax trees:
every ``for`` and comprehension whose iterable names one of those lists.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kubesched.scheduler.engine

ENGINE = Path(kubesched.scheduler.engine.__file__).parent
# Framework's per-point plugin lists (framework/points.py) and what is derived from them.
PLUGIN_LISTS = frozenset(
    {
        "pre_enqueue",
        "queue_sort",
        "pre_filter",
        "filter",
        "post_filter",
        "pre_score",
        "score",
        "reserve",
        "permit",
        "pre_bind",
        "bind",
        "post_bind",
        "plugins",
        "signers",
        "normalizes",
        "_stages",
    }
)


def plugin_loops(source: str, filename: str = "<src>") -> list[str]:
    """``file:line`` of every loop whose iterable reads an attribute named like a framework's plugin list."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        iters: list[ast.expr] = []
        if isinstance(node, (ast.For, ast.AsyncFor)):
            iters.append(node.iter)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            iters.extend(g.iter for g in node.generators)
        for it in iters:
            names = {a.attr for a in ast.walk(it) if isinstance(a, ast.Attribute)}
            if names & PLUGIN_LISTS:
                found.append(f"{filename}:{it.lineno}: over {sorted(names & PLUGIN_LISTS)}")
    return found


def test_no_engine_module_loops_over_a_frameworks_plugins() -> None:
    modules = sorted(ENGINE.glob("*.py"))
    assert len(modules) > 10  # the engine's modules are where they are expected
    found = [hit for path in modules for hit in plugin_loops(path.read_text(), path.name)]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "for plugin in fw.reserve:\n    plugin.reserve(s, p, n)\n",
        "async def f():\n    async for p in profile.framework.pre_bind:\n        pass\n",
        "x = [p.name for p in self.framework.plugins]\n",
        "for p in reversed(fw.reserve):\n    pass\n",
        "total = sum(w for n, (_, w) in zip(cols, fw.score, strict=True))\n",
    ],
)
def test_the_check_catches_a_loop_over_plugins(source: str) -> None:
    assert len(plugin_loops(source)) == 1


def test_the_check_lets_the_engine_ask_whether_a_point_has_plugins() -> None:
    assert plugin_loops("if fw.pre_bind:\n    status = fw.run_pre_bind(s, p, n)\nfirst = fw.bind[0]\n") == []
