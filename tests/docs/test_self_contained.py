"""Everything the docs, the make targets and the benchmarks use lives in the repository: nothing names the
workspace around it (`../shared`, `/work/…`), and every relative link of the Markdown files resolves to a
file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What users and `make` read or run (tests are left out: they name these patterns).
CHECKED = [
    "README.md",
    "Makefile",
    "pyproject.toml",
    "docs",
    "examples",
    "benchmarks",
    "scripts",
    ".ci",
    "deploy",
    "src",
]
TEXT = {".md", ".py", ".yaml", ".yml", ".json", ".toml", ".lua", ".go", ".mod", ".sh", ".txt", ".cfg", ""}
OUTSIDE = re.compile(r"\.\./shared|\bshared/(?:bench|reference)\b|/work/")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def files() -> list[Path]:
    out: list[Path] = []
    for name in CHECKED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out += [p for p in candidates if p.suffix in TEXT and "__pycache__" not in p.parts]
    return out


def outside_references(text: str) -> list[str]:
    return [m.group(0) for m in OUTSIDE.finditer(text)]


def broken_links(md: Path, text: str) -> list[str]:
    """Relative link targets of ``text`` (the page ``md``) that leave the repository or name nothing."""
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the same page
        resolved = (md.parent / target.split("#", 1)[0]).resolve()
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            bad.append(target)
    return bad


def test_nothing_refers_to_files_outside_the_repository() -> None:
    checked = files()
    assert len(checked) > 50  # the walk found the tree
    found = {str(p.relative_to(ROOT)): refs for p in checked if (refs := outside_references(p.read_text()))}
    assert found == {}


def test_every_relative_markdown_link_resolves_inside_the_repository() -> None:
    pages = [p for p in files() if p.suffix == ".md"]
    assert ROOT / "docs" / "zh-CN" / "README.md" in pages
    found = {str(p.relative_to(ROOT)): bad for p in pages if (bad := broken_links(p, p.read_text()))}
    assert found == {}


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    assert outside_references("see ../shared/bench/POLICY.md") == ["../shared"]
    assert outside_references("cd /work/main && make") == ["/work/"]
    assert outside_references("python shared/bench/run.py") == ["shared/bench"]
    assert outside_references("scripts/bench-extender; benchmarks/extender_vs_go/POLICY.md") == []
    page = ROOT / "docs" / "x.md"
    assert broken_links(page, "[p](../../shared/bench/POLICY.md) [q](plugins.md) [r](nope.md#a)") == [
        "../../shared/bench/POLICY.md",
        "nope.md#a",
    ]
