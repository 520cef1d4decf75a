from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.core import NodeSelector, NodeSelectorTerm, Pod, PreferredSchedulingTerm
from kubesched.core.nodeaffinity import (
    compile_preferences,
    compile_selector,
    compile_term,
    is_label_value,
    is_qualified_name,
    parse_int64,
    required_affinity,
)
from kubesched.testing.builders import make_node, make_table

# Row order: a, b, c, d.
TABLE_NODES = [
    make_node("a", labels={"zone": "z1", "cores": "8", "gpu": "true"}),
    make_node("b", labels={"zone": "z2", "cores": "16"}),
    make_node("c", labels={"zone": "z3", "cores": "big"}),
    make_node("d", labels={}),
]


def term(**fields: Any) -> NodeSelectorTerm:
    return msgspec.convert(fields, NodeSelectorTerm)


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def matching(t: NodeSelectorTerm) -> list[str]:
    table = make_table(TABLE_NODES)
    mask = compile_term(t).matches(table, table.rows())
    return [table.names[r] for r in np.flatnonzero(mask).tolist()]


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (expr("zone", "In", "z1", "z3", "z9"), ["a", "c"]),
        (expr("zone", "In", "z9"), []),
        (expr("zone", "NotIn", "z1"), ["b", "c", "d"]),
        (expr("zone", "NotIn", "z9"), ["a", "b", "c", "d"]),
        (expr("gpu", "Exists"), ["a"]),
        (expr("gpu", "DoesNotExist"), ["b", "c", "d"]),
        (expr("cores", "Gt", "8"), ["b"]),
        (expr("cores", "Lt", "16"), ["a"]),
        (expr("cores", "Gt", "007"), ["a", "b"]),
        (expr("absent", "Gt", "0"), []),
    ],
    ids=[
        "in",
        "in-unknown",
        "notin",
        "notin-unknown",
        "exists",
        "doesnotexist",
        "gt",
        "lt",
        "gt-leading-zeros",
        "gt-absent",
    ],
)
def test_label_operators(requirement: dict[str, Any], expected: list[str]) -> None:
    assert matching(term(matchExpressions=[requirement])) == expected


def test_expressions_and_fields_are_anded() -> None:
    t = term(
        matchExpressions=[expr("zone", "In", "z1", "z2")],
        matchFields=[expr("metadata.name", "NotIn", "a")],
    )
    assert matching(t) == ["b"]


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (expr("metadata.name", "In", "c"), ["c"]),
        (expr("metadata.name", "In", "zz"), []),
        (expr("metadata.name", "NotIn", "c"), ["a", "b", "d"]),
        # Unknown fields read as "": In "" matches every node, NotIn "" none.
        (expr("metadata.uid", "In", ""), ["a", "b", "c", "d"]),
        (expr("metadata.uid", "NotIn", ""), []),
    ],
    ids=["name-in", "name-in-unknown", "name-notin", "other-field-in-empty", "other-field-notin-empty"],
)
def test_match_fields(requirement: dict[str, Any], expected: list[str]) -> None:
    assert matching(term(matchFields=[requirement])) == expected


@pytest.mark.parametrize(
    ("t", "error"),
    [
        (
            term(matchExpressions=[expr("zone", "Has", "z1")]),
            'matchExpressions[0].operator: Unsupported value: "Has": supported values: '
            '"DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"',
        ),
        (
            term(matchExpressions=[expr("zone", "In")]),
            "matchExpressions[0].values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            term(matchExpressions=[expr("gpu", "Exists", "x")]),
            "matchExpressions[0].values: Invalid value: ['x']: values set must be empty for exists and does not exist",
        ),
        (
            term(matchExpressions=[expr("cores", "Gt", "1", "2")]),
            "matchExpressions[0].values: Invalid value: ['1', '2']: "
            "for 'Gt', 'Lt' operators, exactly one value is required",
        ),
        (
            term(matchExpressions=[expr("cores", "Lt", "1.5")]),
            'matchExpressions[0].values[0]: Invalid value: "1.5": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            # A negative bound is an integer but not a label value.
            term(matchExpressions=[expr("cores", "Gt", "-1")]),
            'matchExpressions[0].values[0]: Invalid value: "-1": must be a valid label value',
        ),
        (
            term(matchExpressions=[expr("bad key!", "Exists")]),
            'matchExpressions[0].key: Invalid value: "bad key!": must be a qualified name',
        ),
        (
            term(matchExpressions=[expr("zone", "In", "-z")]),
            'matchExpressions[0].values[0]: Invalid value: "-z": must be a valid label value',
        ),
        (
            term(matchFields=[expr("metadata.name", "In", "a", "b")]),
            "matchFields[0].values: Invalid value: ['a', 'b']: must have one element",
        ),
        (
            term(matchFields=[expr("metadata.name", "Exists")]),
            'matchFields[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"',
        ),
    ],
    ids=[
        "operator",
        "in-empty",
        "exists-values",
        "gt-two",
        "lt-not-int",
        "gt-negative",
        "key",
        "value",
        "field-two",
        "field-operator",
    ],
)
def test_parse_errors_match_nothing(t: NodeSelectorTerm, error: str) -> None:
    assert compile_term(t).errors == (error,)
    assert matching(t) == []


def test_selector_ors_terms_and_drops_empty_ones() -> None:
    table = make_table(TABLE_NODES)
    selector = msgspec.convert(
        {
            "nodeSelectorTerms": [
                {},
                {"matchExpressions": [expr("zone", "In", "z2")]},
                {"matchFields": [expr("metadata.name", "In", "d")]},
                {"matchExpressions": [expr("zone", "Bad")]},
            ]
        },
        NodeSelector,
    )
    compiled = compile_selector(selector, "spec.")
    assert len(compiled.terms) == 3
    assert compiled.errors == (
        'spec.nodeSelectorTerms[3].matchExpressions[0].operator: Unsupported value: "Bad": supported values: '
        '"DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"',
    )
    assert compiled.matches(table, table.rows()).tolist() == [False, True, False, True]


def test_only_empty_terms_match_no_node() -> None:
    table = make_table(TABLE_NODES)
    compiled = compile_selector(msgspec.convert({"nodeSelectorTerms": [{}, {"matchExpressions": []}]}, NodeSelector))
    assert compiled.terms == ()
    assert compiled.matches(table, table.rows()).tolist() == [False, False, False, False]


def pod(spec: dict[str, Any]) -> Pod:
    return msgspec.convert({"spec": spec}, Pod)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, [True, True, True, True]),
        ({"nodeSelector": {"zone": "z2"}}, [False, True, False, False]),
        ({"nodeSelector": {"zone": "z1", "gpu": "true"}}, [True, False, False, False]),
        ({"nodeSelector": {"zone": "nowhere"}}, [False, False, False, False]),
        (
            {
                "nodeSelector": {"zone": "z1"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "z1", "z2")]}]
                        }
                    }
                },
            },
            [True, False, False, False],
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
                }
            },
            [False, False, False, False],
        ),
    ],
    ids=["nothing", "selector", "selector-two-keys", "selector-unknown-value", "selector-and-affinity", "no-terms"],
)
def test_required_affinity(spec: dict[str, Any], expected: list[bool]) -> None:
    table = make_table(TABLE_NODES)
    required = required_affinity(pod(spec))
    assert required.matches_all is (spec == {})
    assert required.matches(table, np.array([0, 1, 2, 3])).tolist() == expected


def test_preferences_sum_matching_weights_and_skip_zero_weight_or_empty() -> None:
    table = make_table(TABLE_NODES)
    terms = msgspec.convert(
        [
            {"weight": 5, "preference": {"matchExpressions": [expr("zone", "In", "z1", "z2")]}},
            {"weight": 7, "preference": {"matchExpressions": [expr("gpu", "Exists")]}},
            {"weight": 0, "preference": {"matchExpressions": [expr("zone", "Exists")]}},
            {"weight": 9, "preference": {}},
        ],
        list[PreferredSchedulingTerm],
    )
    prefs, errors = compile_preferences(terms)
    assert errors == []
    assert len(prefs.terms) == 2
    assert prefs.score(table, table.rows()).tolist() == [12, 5, 0, 0]


def test_preference_parse_errors_carry_their_path() -> None:
    terms = msgspec.convert(
        [{"weight": 1, "preference": {"matchExpressions": [expr("cores", "Gt", "x")]}}], list[PreferredSchedulingTerm]
    )
    _, errors = compile_preferences(terms, "preferred")
    assert errors == [
        'preferred[0].preference.matchExpressions[0].values[0]: Invalid value: "x": '
        "for 'Gt', 'Lt' operators, the value must be an integer"
    ]


def test_gt_sees_label_values_added_after_first_use() -> None:
    table = make_table(TABLE_NODES)
    compiled = compile_term(term(matchExpressions=[expr("cores", "Gt", "10")]))
    assert compiled.matches(table, table.rows()).tolist() == [False, True, False, False]
    table.upsert(make_node("e", labels={"cores": "32"}))
    assert compiled.matches(table, table.rows()).tolist() == [False, True, False, False, True]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("+7", 7),
        ("-3", -3),
        ("007", 7),
        ("", None),
        (" 1", None),
        ("1_000", None),
        ("1.0", None),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
    ],
)
def test_parse_int64_follows_go(text: str, expected: int | None) -> None:
    assert parse_int64(text) == expected


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("zone", True),
        ("topology.kubernetes.io/zone", True),
        ("a/b/c", False),
        ("/zone", False),
        ("Upper.Case/x", False),
        ("x" * 63, True),
        ("x" * 64, False),
        ("-x", False),
        ("", False),
    ],
)
def test_is_qualified_name(key: str, expected: bool) -> None:
    assert is_qualified_name(key) is expected


@pytest.mark.parametrize(
    ("value", "expected"), [("", True), ("z1", True), ("a.b_c-d", True), ("-a", False), ("a" * 64, False)]
)
def test_is_label_value(value: str, expected: bool) -> None:
    assert is_label_value(value) is expected
