"""docs/architecture.md is the map the import contracts enforce: the same floors, a row for every package,
every module of the scheduler wing named, every contract and test it cites real."""

from __future__ import annotations

import ast
import itertools
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
SRC = ROOT / "src" / "kubesched"


def section(title: str) -> str:
    start = DOC.index(f"## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else len(DOC)]


def floors_in_doc() -> list[set[str]]:
    block = section("The floors").split("```")[1]
    floors = []
    for line in block.splitlines():
        if line.startswith(" kubesched."):
            names = re.split(r"\s{3,}", line.strip())[0]
            floors.append({n.strip().removeprefix("kubesched.") for n in names.split("|")})
    return floors


def contract(name: str) -> dict[str, object]:
    (found,) = [c for c in CONTRACTS if c["name"] == name]
    return found


def test_the_floors_drawn_are_the_layers_contract() -> None:
    layers = contract("Layers of kubesched")
    assert layers["containers"] == ["kubesched"] and layers["exhaustive"] is True
    expected = [{n.strip() for n in str(layer).split("|")} for layer in layers["layers"]]  # type: ignore[attr-defined]
    assert floors_in_doc() == expected


def test_every_package_and_top_level_module_has_a_row() -> None:
    rows = set(re.findall(r"^\| `kubesched\.([a-z_]+)` \|", section("The rooms"), re.M))
    present = {p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__")}
    present |= {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rows == present


def test_the_scheduler_row_names_every_module_of_the_wing() -> None:
    (row,) = [r for r in section("The rooms").splitlines() if r.startswith("| `kubesched.scheduler`")]
    for sub in ("engine", "profiles", "remote"):
        part = row.split(f"**`{sub}/`**")[1].split("**")[0]
        named = set(re.findall(r"`([a-z_]+)\.py`", part))
        modules = {p.stem for p in (SRC / "scheduler" / sub).glob("*.py") if p.stem != "__init__"}
        assert named == modules, sub
    wing = contract("Layers of the scheduler wing")
    drawn = {n.strip() for layer in wing["layers"] for n in str(layer).split("|")}  # type: ignore[attr-defined]
    assert drawn == {p.stem for p in (SRC / "scheduler").iterdir() if p.stem != "__init__" and p.suffix in ("", ".py")}


def test_every_contract_is_on_the_page_and_every_cited_one_exists() -> None:
    names = {str(c["name"]) for c in CONTRACTS}
    cited = set(re.findall(r"^\| ([A-Z][^|]+?) \| ", section("The floors"), re.M)) - {"contract"}
    cited |= set(re.findall(r'contract "([^"]+)"', DOC))
    assert cited == names


def test_every_file_the_page_cites_exists() -> None:
    cited = set(re.findall(r"`((?:tests|docs|src|deploy)/[\w/.-]+)`", DOC))
    assert cited, "the page cites no file?"
    missing = sorted(path for path in cited if not (ROOT / path).exists())
    assert missing == []


WALK_ITEM = re.compile(r"^(\d+)\. `([a-z_/0-9]+\.py)`: (.+)$", re.M)
WALK_COUNT = re.compile(r"^(\d+) stays in (\d+) files, (\d+) returns", re.M)


def walk_in_doc() -> list[tuple[str, list[str]]]:
    """The numbered walk of "The walk, stop by stop": (file, functions) per stay, in order."""
    part = section("One pod through the scheduler").split("### The walk, stop by stop")[1]
    items = WALK_ITEM.findall(part)
    assert [int(n) for n, _, _ in items] == list(range(1, len(items) + 1))
    return [(path, re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)`", fns)) for _, path, fns in items]


def defined(path: Path) -> set[str]:
    return {
        n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_the_walk_names_functions_that_exist_and_counts_its_stays_right() -> None:
    walk = walk_in_doc()
    for path, functions in walk:
        assert functions, path
        missing = set(functions) - defined(SRC / path)
        assert not missing, (path, missing)
    # Consecutive stays are in different files (else they would be one stay).
    assert all(a[0] != b[0] for a, b in itertools.pairwise(walk))
    part = section("One pod through the scheduler").split("### The walk, stop by stop")[1]
    stays, files, returns = (int(x) for x in WALK_COUNT.search(part).groups())  # type: ignore[union-attr]
    assert (stays, files, returns) == (len(walk), len({p for p, _ in walk}), len(walk) - len({p for p, _ in walk}))
    assert walk[0] == ("scheduler/engine/scheduler.py", ["schedule_one", "_schedule"])
    assert ("cluster/http1.py", ["request"]) in walk  # it ends with the Binding POST on the wire
