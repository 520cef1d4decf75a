from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.errors import ConfigurationError
from kubesched.framework.interfaces import CycleState
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.runtime import Framework
from kubesched.framework.status import SKIP, SUCCESS, Code, Status
from kubesched.plugins import in_tree
from kubesched.plugins.node_affinity import NodeAffinity, NodeAffinityArgs
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

POD = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",))
ENFORCED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match scheduler-enforced node affinity",))
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod affinity terms conflict",))

# Row order: a, b, c, d.
NODES = [
    make_node("a", labels={"zone": "z1", "disk": "ssd"}),
    make_node("b", labels={"zone": "z2"}),
    make_node("c", labels={"zone": "z1"}),
    make_node("d"),
]


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    terms = [{"weight": w, "preference": p} for w, p in weighted]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


def plugin(added: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity(msgspec.convert({"addedAffinity": added} if added else {}, NodeAffinityArgs))


ZONE_Z1 = required({"matchExpressions": [expr("zone", "In", "z1")]})["nodeAffinity"]


@pytest.mark.parametrize(
    ("spec", "added", "expected"),
    [
        ({}, None, [None, None, None, None]),
        ({"nodeSelector": {"zone": "z1"}}, None, [None, POD, None, POD]),
        ({"affinity": required({"matchExpressions": [expr("zone", "NotIn", "z1")]})}, None, [POD, None, POD, None]),
        ({"affinity": required({"matchFields": [expr("metadata.name", "In", "c")]})}, None, [POD, POD, None, POD]),
        (
            {
                "affinity": required(
                    {"matchExpressions": [expr("disk", "Exists")]}, {"matchExpressions": [expr("zone", "In", "z2")]}
                )
            },
            None,
            [None, None, POD, POD],
        ),
        ({"affinity": required({}, {"matchExpressions": []})}, None, [POD, POD, POD, POD]),
        ({}, ZONE_Z1, [None, ENFORCED, None, ENFORCED]),
        ({"nodeSelector": {"disk": "ssd"}}, ZONE_Z1, [None, ENFORCED, POD, ENFORCED]),
    ],
    ids=["nothing", "node-selector", "notin", "match-fields", "terms-ored", "only-empty-terms", "added", "added-first"],
)
def test_filter(spec: dict[str, Any], added: dict[str, Any] | None, expected: list[Status | None]) -> None:
    verdicts = plugin(added).filter(CycleState(), make_pod(**spec), batch(make_table(NODES)))
    assert results(verdicts) == expected


def names(*values: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *values)


@pytest.mark.parametrize(
    ("spec", "added", "status", "node_names"),
    [
        ({}, None, SKIP, None),
        ({"nodeSelector": {}}, None, SUCCESS, None),
        ({}, ZONE_Z1, SUCCESS, None),
        ({"affinity": required()}, None, SUCCESS, None),
        ({"affinity": required({"matchExpressions": [expr("zone", "Exists")]})}, None, SUCCESS, None),
        ({"affinity": required({"matchFields": [names("a", "b")]})}, None, SUCCESS, {"a", "b"}),
        ({"affinity": required({"matchFields": [names("a", "b"), names("b", "c")]})}, None, SUCCESS, {"b"}),
        (
            {"affinity": required({"matchFields": [names("a")]}, {"matchFields": [names("c")]})},
            None,
            SUCCESS,
            {"a", "c"},
        ),
        ({"affinity": required({"matchFields": [names("a")]}, {})}, None, SUCCESS, None),
        ({"affinity": required({"matchFields": [names("a"), names("b")]})}, None, CONFLICT, None),
    ],
    ids=[
        "skip",
        "empty-node-selector",
        "added-only",
        "no-terms",
        "no-name-field",
        "names",
        "names-intersected",
        "names-united",
        "one-term-unrestricted",
        "conflict",
    ],
)
def test_pre_filter(
    spec: dict[str, Any], added: dict[str, Any] | None, status: Status, node_names: set[str] | None
) -> None:
    result = plugin(added).pre_filter(CycleState(), make_pod(**spec), make_table(NODES))
    assert result.status == status
    assert result.node_names == (frozenset(node_names) if node_names is not None else None)


SSD = {"matchExpressions": [expr("disk", "In", "ssd")]}
Z1 = {"matchExpressions": [expr("zone", "In", "z1")]}
Z2 = {"matchExpressions": [expr("zone", "In", "z2")]}


@pytest.mark.parametrize(
    ("spec", "added", "status"),
    [
        ({}, None, SKIP),
        ({"affinity": required(Z1)}, None, SKIP),
        ({"affinity": preferred()}, None, SUCCESS),
        ({}, {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": Z1}]}, SUCCESS),
        (
            {"affinity": preferred((1, {"matchExpressions": [expr("zone", "Gt", "x")]}))},
            None,
            Status.error(
                '[0].preference.matchExpressions[0].values[0]: Invalid value: "x": '
                "for 'Gt', 'Lt' operators, the value must be an integer"
            ),
        ),
    ],
    ids=["nothing", "required-only", "empty-preferred", "added-preferred", "parse-error"],
)
def test_pre_score(spec: dict[str, Any], added: dict[str, Any] | None, status: Status) -> None:
    assert plugin(added).pre_score(CycleState(), make_pod(**spec), batch(make_table(NODES))) == status


def test_score_sums_pod_and_added_weights_then_normalizes() -> None:
    pl = plugin({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 2, "preference": Z2}]})
    pod = make_pod(affinity=preferred((3, Z1), (5, SSD), (0, Z2)))
    nodes = batch(make_table(NODES))
    scores = pl.score(CycleState(), pod, nodes)
    assert scores.tolist() == [8, 2, 3, 0]
    # 100·raw/8, truncated.
    assert pl.normalize(CycleState(), pod, nodes, scores).tolist() == [100, 25, 37, 0]
    assert pl.normalize(CycleState(), pod, nodes, scores * 0).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "Near", "z1")]}]
                    }
                }
            },
            "pluginConfig[NodeAffinity].args: addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
            'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Near": '
            'supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"',
        ),
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchFields": [names("a", "b")]}}
                    ]
                }
            },
            "pluginConfig[NodeAffinity].args: addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]."
            "preference.matchFields[0].values: Invalid value: ['a', 'b']: must have one element",
        ),
        (
            {"addedAffinty": {}},
            "pluginConfig[NodeAffinity].args: Object contains unknown field `addedAffinty`",
        ),
    ],
    ids=["required-operator", "preferred-fields", "unknown-field"],
)
def test_args_errors(args: dict[str, Any], problem: str) -> None:
    spec = ProfileSpec(plugins=(PluginRef("NodeAffinity"),), plugin_args={"NodeAffinity": args})
    with pytest.raises(ConfigurationError) as err:
        Framework.build(spec, in_tree())
    assert [str(e) for e in err.value.errors] == [problem]
