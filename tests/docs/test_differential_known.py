"""docs/scheduler.md lists the differential test's Known differences: the very entries of the code, by id."""

from __future__ import annotations

import re
from pathlib import Path

from kubesched.testing.differential.known import KNOWN

DOC = Path(__file__).parents[2] / "docs" / "scheduler.md"


def test_docs_name_every_known_difference_and_no_other() -> None:
    section = DOC.read_text().split("### Known differences of the differential test", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"^\* `([a-z0-9-]+)`", section, re.M)
    assert sorted(named) == sorted(k.id for k in KNOWN)
