"""tests/unit mirrors src/kubesched: one folder per package, loose files only for root-level modules; and no
module of src/kubesched is over 450 lines.

A test is found where its code lives: the tests of `kubesched.scheduler.engine.queue` are in
`tests/unit/scheduler/engine/`, those of `kubesched.pki` in `tests/unit/test_pki.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import kubesched

UNIT = Path(__file__).parent / "unit"
SRC = Path(kubesched.__file__).parent
SUPPORT = {"__init__.py", "conftest.py"}  # pytest's own files, allowed in every folder


def folders(unit: Path) -> list[str]:
    """Every test folder under ``unit``, relative to it (``scheduler/engine``)."""
    return sorted(str(d.relative_to(unit)) for d in unit.rglob("*") if d.is_dir() and d.name != "__pycache__")


def packages(src: Path) -> set[str]:
    """Every subpackage of ``src``, relative to it."""
    return {str(p.parent.relative_to(src)) for p in src.rglob("__init__.py") if p.parent != src}


def misplaced(unit: Path, src: Path) -> list[str]:
    """What breaks the mirroring, one line each; empty when the layout is right."""
    known = packages(src)
    problems = [f"{d}/: no package kubesched.{d.replace('/', '.')}" for d in folders(unit) if d not in known]
    problems += [f"{d}/: no __init__.py" for d in folders(unit) if not (unit / d / "__init__.py").exists()]
    modules = {p.stem for p in src.glob("*.py") if p.name != "__init__.py"}
    for loose in sorted(unit.glob("*.py")):
        if loose.name not in SUPPORT and loose.stem.removeprefix("test_") not in modules:
            problems.append(f"{loose.name}: loose, but kubesched has no root module {loose.stem.removeprefix('test_')}")
    return problems


def test_unit_tests_mirror_the_source_tree() -> None:
    assert misplaced(UNIT, SRC) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (["unit/test_pki.py", "unit/core/__init__.py", "unit/core/test_quantity.py"], []),
        (["unit/test_quantity.py"], ["test_quantity.py: loose, but kubesched has no root module quantity"]),
        (["unit/misc/__init__.py", "unit/misc/test_x.py"], ["misc/: no package kubesched.misc"]),
        (["unit/core/test_quantity.py"], ["core/: no __init__.py"]),
    ],
)
def test_the_check_catches_a_misplaced_file(tmp_path: Path, files: list[str], expected: list[str]) -> None:
    src = tmp_path / "src"
    for made in ("__init__.py", "pki.py", "core/__init__.py", "core/quantity.py"):
        (src / made).parent.mkdir(parents=True, exist_ok=True)
        (src / made).touch()
    for made in files:
        (tmp_path / made).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / made).touch()
    assert misplaced(tmp_path / "unit", src) == expected


MAX_LINES = 450  # docs/architecture.md, "Tests": a module past it is split along a seam, not squeezed


def oversized(src: Path, limit: int = MAX_LINES) -> list[str]:
    """Every module of ``src`` longer than ``limit`` lines, with its length."""
    lengths = {p: len(p.read_text().splitlines()) for p in sorted(src.rglob("*.py"))}
    return [f"{p.relative_to(src)}: {n} lines" for p, n in lengths.items() if n > limit]


def test_no_module_is_over_450_lines() -> None:
    assert oversized(SRC) == []


def test_the_size_check_catches_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * 451)
    (tmp_path / "short.py").write_text("x = 1\n" * 450)
    assert oversized(tmp_path) == ["pkg/long.py: 451 lines"]


def test_no_merge_conflict_markers_are_committed() -> None:
    """A merge resolved by hand leaves no ``<<<<<<<``/``>>>>>>>`` lines in any tracked text file."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    marked = []
    for name in files:
        path = root / name
        if (
            path.suffix not in {".py", ".md", ".yaml", ".yml", ".toml", ".json", ".txt", ".tpl", ""}
            or not path.is_file()
        ):
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.startswith(("<<<<<<< ", ">>>>>>> ")):
                marked.append(f"{name}:{n}")
    assert not marked, marked
