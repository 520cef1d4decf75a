"""requirements.lock and requirements-dev.lock agree with pyproject.toml (`make lock` writes both with pip-tools).

Every line of a lock is pinned (`==`) and hashed, so `pip install --require-hashes` (the image, `make setup`) installs
exactly what was locked; every dependency of pyproject.toml is pinned there at a version it admits, and nothing the
lock says comes from pyproject.toml has left it. No network: the files are only read.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
DIRECT = "kubesched (pyproject.toml)"  # pip-compile's "# via" for what pyproject.toml asks for


@dataclass
class Pin:
    name: str
    version: str
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def parse_lock(text: str) -> tuple[dict[str, Pin], list[str]]:
    """The pins of a pip-compile file (continuations joined, `# via` annotations kept) and every malformed line."""
    pins: dict[str, Pin] = {}
    problems: list[str] = []
    current: Pin | None = None
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not logical and (not line or line.startswith("#")):
            note = line.lstrip("#").strip()
            if current is not None and note:
                current.via.append(note[4:] if note.startswith("via ") else "" if note == "via" else note)
            continue
        logical += line.removesuffix("\\") + " "
        if line.endswith("\\"):
            continue
        words, logical = logical.split(), ""
        spec = " ".join(w for w in words if not w.startswith("--hash="))
        try:
            req = Requirement(spec)
        except ValueError as err:
            problems.append(f"{spec}: {err}")
            continue
        versions = [s.version for s in req.specifier if s.operator == "=="]
        if len(versions) != 1 or len(req.specifier) != 1:
            problems.append(f"{req.name}: not pinned with == ({req.specifier or 'no version'})")
            continue
        current = Pin(canonicalize_name(req.name), versions[0])
        current.hashes = [w.removeprefix("--hash=") for w in words if w.startswith("--hash=")]
        if not current.hashes or not all(h.startswith("sha256:") for h in current.hashes):
            problems.append(f"{req.name}: no sha256 --hash")
        pins[current.name] = current
    return pins, problems


def lock_problems(requirements: list[str], lock_text: str, lock_name: str) -> list[str]:
    """What keeps the lock from installing ``requirements`` (pyproject.toml's) exactly; empty when in sync."""
    pins, problems = parse_lock(lock_text)
    wanted: set[str] = set()
    for line in requirements:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        wanted.add(name)
        pin = pins.get(name)
        if pin is None:
            problems.append(f"{req.name}: in pyproject.toml, not in {lock_name}: run make lock")
        elif not req.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{req.name}: {lock_name} pins {pin.version}, pyproject.toml wants {req.specifier}")
    for pin in pins.values():
        if DIRECT in pin.via and pin.name not in wanted:
            problems.append(f"{pin.name}: {lock_name} has it from pyproject.toml, which no longer asks for it")
    return problems


def _project() -> dict[str, list[str]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {"runtime": project["dependencies"], "dev": project["optional-dependencies"]["dev"]}


def test_the_runtime_lock_matches_pyproject() -> None:
    text = (REPO / "requirements.lock").read_text()
    assert lock_problems(_project()["runtime"], text, "requirements.lock") == []
    assert "make lock" in text  # the header names the command that rewrites it


def test_the_dev_lock_matches_pyproject_and_the_runtime_lock() -> None:
    deps = _project()
    text = (REPO / "requirements-dev.lock").read_text()
    assert lock_problems(deps["runtime"] + deps["dev"], text, "requirements-dev.lock") == []
    runtime, _ = parse_lock((REPO / "requirements.lock").read_text())
    dev, _ = parse_lock(text)
    # `make setup` installs requirements.lock first: the dev lock must not move any of its pins.
    assert {n: p.version for n, p in dev.items() if n in runtime} == {n: p.version for n, p in runtime.items()}


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        (["pyyaml>=6.0", "left-pad>=1"], ["left-pad: in pyproject.toml, not in L: run make lock"]),
        (["pyyaml>=7"], ["pyyaml: L pins 6.0.4, pyproject.toml wants >=7"]),
        ([], ["pyyaml: L has it from pyproject.toml, which no longer asks for it"]),
        (["PyYAML>=6.0"], []),
    ],
)
def test_the_check_catches_a_lock_out_of_sync(requirements: list[str], expected: list[str]) -> None:
    lock = "pyyaml==6.0.4 \\\n    --hash=sha256:ab\n    # via kubesched (pyproject.toml)\n"
    assert lock_problems(requirements, lock, "L") == expected


@pytest.mark.parametrize(
    ("lock", "expected"),
    [
        ("rich>=13\n", ["rich: not pinned with == (>=13)"]),
        ("rich==15.0.0\n", ["rich: no sha256 --hash"]),
        ("rich==15.0.0 \\\n    --hash=md5:00\n", ["rich: no sha256 --hash"]),
    ],
)
def test_every_line_is_pinned_and_hashed(lock: str, expected: list[str]) -> None:
    assert parse_lock(lock)[1] == expected


def test_via_annotations_over_several_lines() -> None:
    lock = "idna==3.21 \\\n    --hash=sha256:ab\n    # via\n    #   anyio\n    #   kubesched (pyproject.toml)\n"
    pins, problems = parse_lock(lock)
    assert problems == [] and pins["idna"].via == ["", "anyio", DIRECT]
