"""kube-scheduler's plugin args rules, each with its message and field path (config/pluginargs.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.config.pluginargs import validate_args
from kubesched.versions import parse_release

AT = "profiles[0].pluginConfig[0].args"
R137, R135 = parse_release("1.37"), parse_release("v1.35.4")


def check(name: str, value: Any, rel: Any = R137) -> list[str]:
    return [str(e) for e in validate_args(name, value, AT, rel)]


CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("DefaultPreemption", {}, []),
    (
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 101, "minCandidateNodesAbsolute": -1},
        [
            f"{AT}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
            f"{AT}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ],
    ),
    (
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        [
            f"{AT}.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as"
            " minCandidateNodesAbsolute",
            f"{AT}.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as"
            " minCandidateNodesPercentage",
        ],
    ),
    (
        "InterPodAffinity",
        {"hardPodAffinityWeight": 101},
        [f"{AT}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"],
    ),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
        [
            f"{AT}.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"  # noqa: E501 - test data on one line
        ],
    ),
    (
        "NodeResourcesFit",
        {"ignoredResourceGroups": ["example.com/gpu"]},
        [f"{AT}.ignoredResourceGroups[0]: Invalid value: \"example.com/gpu\": resource group name can't contain '/'"],
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}, {"utilization": 40}]},
            }
        },
        [
            f"{AT}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 40: values must be"
            " sorted in increasing order",
            f"{AT}.scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range"
            " [0, 10]",
        ],
    ),
    (
        "PodTopologySpread",
        {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
        [f'{AT}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'],
    ),
    (
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Sometimes", "labelSelector": {}},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            ],
        },
        [
            f"{AT}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
            f"{AT}.defaultConstraints[0].topologyKey: Required value: can not be empty",
            f'{AT}.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values:'
            ' "DoNotSchedule", "ScheduleAnyway"',
            f"{AT}.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they"
            " deduced for each pod",
            f'{AT}.defaultConstraints[2]: Duplicate value: "{{zone, DoNotSchedule}}"',
        ],
    ),
    (
        "PodTopologySpread",
        {"defaultingType": "Sometimes"},
        [f'{AT}.defaultingType: Unsupported value: "Sometimes": supported values: "System", "List"'],
    ),
    (
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 2}, {"name": "cpu"}]},
        [
            f"{AT}.resources[0].weight: Invalid value: 2: must be 1",
            f'{AT}.resources[1].name: Duplicate value: "cpu"',
        ],
    ),
    (
        "VolumeBinding",
        {"bindTimeoutSeconds": -1},
        [f"{AT}.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value"],
    ),
    (
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In"},
                                {"key": "zone", "operator": "Near", "values": ["a"]},
                                {"key": "n", "operator": "Gt", "values": ["x"]},
                            ],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}],
                        }
                    ]
                }
            }
        },
        [
            f"{AT}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
            ".values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty",
            f"{AT}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1]"
            '.operator: Unsupported value: "Near": supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"',  # noqa: E501 - test data on one line
            f"{AT}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2]"
            ".values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
            f"{AT}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0]"
            '.values: Invalid value: []string{"a", "b"}: must have one element',
        ],
    ),
    (
        "DynamicResources",
        {"filterTimeout": "-1s"},
        [f'{AT}.filterTimeout: Invalid value: "-1s": must be zero or positive'],
    ),
    (
        "DynamicResources",
        {"bindingTimeout": "500ms"},
        [f'{AT}.bindingTimeout: Invalid value: "500ms": must be at least 1 second'],
    ),
]


@pytest.mark.parametrize(("name", "value", "want"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule(name: str, value: dict[str, Any], want: list[str]) -> None:
    assert check(name, value) == want


def test_binding_timeout_is_forbidden_on_1_35() -> None:
    assert check("DynamicResources", {"bindingTimeout": "5s"}, R135) == [
        f"{AT}.bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is"
        " disabled"
    ]


def test_strict_decoding_of_args() -> None:
    assert check("NodeResourcesFit", {"scoringStrategy": {"typ": "LeastAllocated"}, "bogus": 1}) == [
        f"{AT}.scoringStrategy.typ: unknown field; did you mean 'type'?",
        f"{AT}.bogus: unknown field",
    ]


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ([], f"{AT}: must be an object"),
        ({"hardPodAffinityWeight": "1"}, f"{AT}.hardPodAffinityWeight: must be an integer (Go type int32)"),
        ({"hardPodAffinityWeight": True}, f"{AT}.hardPodAffinityWeight: must be an integer (Go type int32)"),
        ({"hardPodAffinityWeight": 2**31}, f"{AT}.hardPodAffinityWeight: 2147483648 does not fit in Go type int32"),
        ({"ignorePreferredTermsOfExistingPods": "yes"}, f"{AT}.ignorePreferredTermsOfExistingPods: must be a boolean"),
        ({"kind": 3}, f"{AT}.kind: must be a string"),
    ],
)
def test_wrong_types_are_field_errors(value: Any, want: str) -> None:
    assert check("InterPodAffinity", value) == [want]


def test_wrong_types_deep_inside_are_field_errors() -> None:
    value = {"defaultingType": "List", "defaultConstraints": [{"labelSelector": {"matchExpressions": "x"}}, 7]}
    assert check("PodTopologySpread", value) == [
        f"{AT}.defaultConstraints[0].labelSelector.matchExpressions: must be a list",
        f"{AT}.defaultConstraints[1]: must be an object",
    ]


def test_args_of_plugins_kube_scheduler_does_not_know_are_left_alone() -> None:
    assert check("MyPlugin", {"anything": [1, 2]}) == []
