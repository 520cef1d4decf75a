"""One loader for policies, plugins and webhook rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubesched.framework.loader import LoadError, load_object


def test_file_default_attr_base_and_fresh_reload(tmp_path: Path) -> None:
    f = tmp_path / "mine.py"
    f.write_text("policy = 1\nother = 'x'\n")
    assert load_object("mine.py", default_attr="policy", base=tmp_path) == 1
    assert load_object(f"{f}:other") == "x"
    f.write_text("policy = 2\nother = 'y'\n")
    os.utime(f, ns=(1, 1))  # a different mtime even within the clock's resolution
    assert load_object(str(f), default_attr="policy", fresh=True) == 2
    assert load_object("json:dumps").__name__ == "dumps"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_such_module_xyz:thing", "cannot import no_such_module_xyz"),
        ("json:nope", "json has no attribute 'nope'"),
        ("json", "expected package.module:attr"),
        ("/does/not/exist.py:x", "no such file"),
    ],
)
def test_errors_name_what_failed(spec: str, says: str) -> None:
    with pytest.raises(LoadError, match=says):
        load_object(spec)


def test_a_module_that_fails_to_import(tmp_path: Path) -> None:
    f = tmp_path / "broken.py"
    f.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(LoadError, match=r"importing .* failed: RuntimeError: boom"):
        load_object(f"{f}:x")
