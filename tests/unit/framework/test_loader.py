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


def test_installed_only_refuses_files_and_stray_modules_before_importing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\nX = 1\n")
    (tmp_path / "stray_mod_xyz.py").write_text(f"open({str(marker)!r}, 'w').close()\nX = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # importable, but no installed package's
    with pytest.raises(LoadError, match=r"evil\.py is a file: refused by --plugins-from image"):
        load_object(f"{evil}:X", installed_only=True)
    with pytest.raises(LoadError, match="stray_mod_xyz is no module of an installed package"):
        load_object("stray_mod_xyz:X", installed_only=True)
    with pytest.raises(LoadError, match="json is no module of an installed package"):
        load_object("json:dumps", installed_only=True)  # the standard library is no plugin source either
    assert not marker.exists()  # nothing was imported
    # Installed: kubesched itself and the packages installed beside it.
    assert load_object("kubesched.plugins.node_name:NodeName", installed_only=True).__name__ == "NodeName"
    assert load_object("yaml:safe_load", installed_only=True).__name__ == "safe_load"
    assert load_object("stray_mod_xyz:X") == 1 and marker.exists()  # without it, as before
