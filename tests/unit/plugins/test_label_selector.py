from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import LabelSelector
from kubesched.plugins.helpers.label_selector import SelectorError, compile_selector

LABELS = {"app": "web", "tier": "front"}


def selector(doc: dict[str, Any] | None) -> LabelSelector | None:
    return None if doc is None else msgspec.convert(doc, LabelSelector)


@pytest.mark.parametrize(
    ("doc", "matches"),
    [
        (None, False),
        ({}, True),
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "web", "tier": "back"}}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "zone", "operator": "Exists"}]},
            False,
        ),
    ],
    ids=[
        "nil-selects-nothing",
        "empty-selects-everything",
        "match-labels",
        "match-labels-all-needed",
        "in",
        "not-in",
        "not-in-absent-label",
        "exists",
        "does-not-exist",
        "labels-and-expressions",
    ],
)
def test_matches(doc: dict[str, Any] | None, matches: bool) -> None:
    assert compile_selector(selector(doc)).matches(LABELS) is matches


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (
            {"matchExpressions": [{"key": "app", "operator": "in", "values": ["x"]}]},
            '"in" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "In"}]},
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
            "values: Invalid value: ['x']: values set must be empty for exists and does not exist",
        ),
        ({"matchLabels": {"bad key": "x"}}, 'key: Invalid value: "bad key": must be a qualified name'),
    ],
    ids=["operator-case", "in-without-values", "exists-with-values", "key"],
)
def test_selectors_that_do_not_parse(doc: dict[str, Any], error: str) -> None:
    with pytest.raises(SelectorError) as err:
        compile_selector(selector(doc))
    assert str(err.value) == error


def test_with_labels_ands_pairs_and_keeps_nothing() -> None:
    merged = compile_selector(selector({"matchLabels": {"app": "web"}})).with_labels({"rev": "2"})
    assert not merged.matches(LABELS)
    assert merged.matches({**LABELS, "rev": "2"})
    assert compile_selector(None).with_labels({"rev": "2"}).nothing
    assert not compile_selector(selector({})).with_labels({"rev": "2"}).empty
