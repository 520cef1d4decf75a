"""JSON Patch generation: add versus replace, list appends, JSON Pointer escaping; checked by applying it."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.webhook.jsonpatch import diff, escape

from .conftest import apply_patch


def test_escape_tilde_before_slash() -> None:
    assert escape("kubernetes.io/os") == "kubernetes.io~1os"
    assert escape("a~b") == "a~0b"
    assert escape("~/") == "~0~1"  # not "~01": ~ is escaped first
    assert escape("a~1b") == "a~01b"


@pytest.mark.parametrize(
    ("old", "new", "ops"),
    [
        ({"a": 1}, {"a": 1}, []),
        ({}, {"spec": {"x": 1}}, [{"op": "add", "path": "/spec", "value": {"x": 1}}]),
        ({"s": "a"}, {"s": "b"}, [{"op": "replace", "path": "/s", "value": "b"}]),
        ({"a": 1, "b": 2}, {"a": 1}, [{"op": "remove", "path": "/b"}]),
        (
            {"labels": {"app": "x"}},
            {"labels": {"app": "x", "example.com/tier": "gold"}},
            [{"op": "add", "path": "/labels/example.com~1tier", "value": "gold"}],
        ),
        (
            {"m": {"a~/b": "1"}},
            {"m": {"a~/b": "2"}},
            [{"op": "replace", "path": "/m/a~0~1b", "value": "2"}],
        ),
        (
            {"t": [1]},
            {"t": [1, 2, 3]},
            [{"op": "add", "path": "/t/-", "value": 2}, {"op": "add", "path": "/t/-", "value": 3}],
        ),
        ({"t": []}, {"t": [{"k": 1}]}, [{"op": "add", "path": "/t/-", "value": {"k": 1}}]),
        ({"t": [1, 2]}, {"t": [2]}, [{"op": "replace", "path": "/t", "value": [2]}]),
        ({"t": None}, {"t": [1]}, [{"op": "replace", "path": "/t", "value": [1]}]),
        ({"b": 1}, {"b": True}, [{"op": "replace", "path": "/b", "value": True}]),
        ({"f": 1}, {"f": 1.0}, [{"op": "replace", "path": "/f", "value": 1.0}]),
    ],
)
def test_diff(old: dict[str, Any], new: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    assert diff(old, new) == ops
    assert apply_patch(old, ops) == new


def test_round_trip_on_a_pod() -> None:
    old = {
        "metadata": {"name": "p", "labels": {"a/b": "1", "c~d": "2"}},
        "spec": {"tolerations": [{"key": "x"}], "containers": [{"name": "c"}], "nodeSelector": {"k": "v"}},
    }
    new = {
        "metadata": {"name": "p", "labels": {"a/b": "1", "c~d": "3", "e/f~g": "4"}, "annotations": {"x/y": "z"}},
        "spec": {
            "tolerations": [{"key": "x"}, {"key": "y", "operator": "Exists"}],
            "containers": [{"name": "c"}],
            "nodeSelector": {"k": "w"},
            "schedulerName": "kubesched",
        },
    }
    assert apply_patch(old, diff(old, new)) == new


def test_the_applier_decodes_pointers_as_rfc_6901() -> None:
    """The test's own applier must not share the code's mistakes: "~01" is the key "~1", not "/"."""
    assert apply_patch({"~1": 0, "/": 0}, [{"op": "replace", "path": "/~01", "value": 1}]) == {"~1": 1, "/": 0}
