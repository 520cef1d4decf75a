"""Hostile configuration files: field-path errors, never a traceback (config/yamlin.py)."""

from __future__ import annotations

import pytest

from kubesched.config import yamlin


def problems(text: str) -> list[str]:
    return [str(e) for e in yamlin.load(text)[1]]


def test_duplicate_keys_are_errors_at_their_path() -> None:
    text = "a: 1\nprofiles:\n- schedulerName: x\n  schedulerName: y\na: 2\n"
    assert problems(text) == [
        'a: duplicate field "a" (line 5: key already set in map)',
        'profiles[0].schedulerName: duplicate field "schedulerName" (line 4: key already set in map)',
    ]


def test_deep_nesting_is_refused() -> None:
    assert problems("[" * 5000 + "]" * 5000) == [
        f"<document>: not valid YAML or JSON: nested more than {yamlin.MAX_DEPTH} levels deep"
    ]
    doc, errors = yamlin.load("a:" + " {b:" * 50 + " 1" + "}" * 50)
    assert not errors and isinstance(doc, dict)


def test_alias_bombs_are_refused_before_anything_walks_them() -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    assert problems("\n".join(lines)) == [
        f"<document>: has more than {yamlin.MAX_VALUES} values once YAML aliases are expanded"
    ]


def test_a_recursive_alias_is_refused() -> None:
    assert problems("a: &a [*a]") == [
        "<document>: not valid YAML or JSON: found unconstructable recursive node (line 1, column 4)"
    ]


def test_huge_text_is_refused_unparsed() -> None:
    assert problems("#" * (yamlin.MAX_BYTES + 1)) == [
        f"<document>: is {yamlin.MAX_BYTES + 1} bytes; a configuration is limited to {yamlin.MAX_BYTES}"
    ]


@pytest.mark.parametrize(
    "text", ["a: [", "{a: 1", "\t- x", "? [a]\n: 1", "!!python/object:os.system x", "a: *undefined"]
)
def test_broken_yaml_is_one_error(text: str) -> None:
    found = problems(text)
    assert len(found) == 1 and found[0].startswith("<document>: not valid YAML or JSON: ")
