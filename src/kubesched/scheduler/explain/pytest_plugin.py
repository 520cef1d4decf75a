"""pytest fixtures for policy authors: assert a profile's decisions on a cluster file, offline.

Load with ``-p kubesched.scheduler.explain.pytest_plugin`` (or ``pytest_plugins = [...]`` in a root
conftest.py). Fixtures:

``kubesched_explain``  - `explain_file`: ``kubesched_explain("cluster.yaml", "ml/train-0", config="sched.yaml")``
                         returns the `Explanation` (``.node``, ``.message``, ``.nodes``, ``.help``).
``kubesched_golden``   - ``kubesched_golden(explanation, "golden/train-0.json")``: the explanation's JSON must
                         equal the file (a path relative to the test file); ``--kubesched-update-goldens``
                         writes the files instead. A difference fails with a unified diff.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from kubesched.scheduler.explain.model import Explanation
from kubesched.scheduler.explain.offline import explain_file

Golden = Callable[[Explanation, "Path | str"], None]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kubesched-update-goldens",
        action="store_true",
        default=False,
        help="kubesched_golden: write the explanations' JSON to their golden files instead of comparing",
    )


def golden_text(ex: Explanation) -> str:
    """An explanation as its golden file holds it: the `-o json` document, keys in schema order."""
    return msgspec.json.format(msgspec.json.encode(ex), indent=2).decode() + "\n"


@pytest.fixture
def kubesched_explain() -> Callable[..., Explanation]:
    return explain_file


@pytest.fixture
def kubesched_golden(request: pytest.FixtureRequest) -> Golden:
    update = bool(request.config.getoption("--kubesched-update-goldens"))
    here = request.path.parent

    def check(ex: Explanation, path: Path | str) -> None:
        file = Path(path) if Path(path).is_absolute() else here / path
        got = golden_text(ex)
        if update:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(got)
            return
        if not file.exists():
            pytest.fail(f"no golden file {file}: run pytest with --kubesched-update-goldens to write it")
        want = file.read_text()
        if got != want:
            diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), str(file), "explained"))
            pytest.fail(f"the explanation of {ex.pod} differs from {file}:\n{diff}", pytrace=False)

    return check
