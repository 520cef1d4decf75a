from __future__ import annotations

import numpy as np
import pytest

from kubesched.api.core import Taint, Toleration
from kubesched.core.tolerations import (
    DO_NOT_SCHEDULE,
    PREFER_NO_SCHEDULE,
    any_untolerated,
    count_untolerated,
    first_untolerated,
    tolerated,
    tolerates,
)
from kubesched.testing.builders import make_node, make_table

GPU = Taint(key="gpu", value="true", effect="NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (Toleration(key="gpu", operator="Equal", value="true", effect="NoSchedule"), GPU, True),
        (Toleration(key="gpu", operator="Equal", value="false", effect="NoSchedule"), GPU, False),
        (Toleration(key="gpu", value="true", effect="NoSchedule"), GPU, True),
        (Toleration(key="gpu", operator="Exists", effect="NoSchedule"), GPU, True),
        (Toleration(key="gpu", operator="Exists"), GPU, True),
        (Toleration(key="gpu", operator="Exists", effect="NoExecute"), GPU, False),
        (Toleration(key="cpu", operator="Exists"), GPU, False),
        (Toleration(operator="Exists"), GPU, True),
        (Toleration(operator="Exists", effect="NoSchedule"), GPU, True),
        (Toleration(operator="Exists", effect="PreferNoSchedule"), GPU, False),
        (Toleration(key="n", value="5", operator="Gt"), Taint(key="n", value="9", effect="NoSchedule"), False),
        (Toleration(key="n", value="5", operator="Lt"), Taint(key="n", value="1", effect="NoSchedule"), False),
        (Toleration(key="gpu", operator="Bogus", value="true"), GPU, False),
        (Toleration(operator="Equal"), Taint(key="any", effect="NoExecute"), True),
        (Toleration(operator="Equal"), GPU, False),
    ],
    ids=[
        "equal",
        "equal-other-value",
        "empty-operator-is-equal",
        "exists-with-effect",
        "exists-any-effect",
        "exists-other-effect",
        "other-key",
        "empty-key-exists-matches-all",
        "empty-key-exists-same-effect",
        "empty-key-exists-other-effect",
        "gt-gate-off",
        "lt-gate-off",
        "unknown-operator",
        "empty-key-equal-empty-value",
        "empty-key-equal-other-value",
    ],
)
def test_tolerates(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_tolerated_needs_one_match() -> None:
    assert tolerated([Toleration(key="x", operator="Exists"), Toleration(key="gpu", operator="Exists")], GPU)
    assert not tolerated([Toleration(key="x", operator="Exists")], GPU)
    assert not tolerated([], GPU)


def test_first_untolerated_keeps_node_order_and_effects() -> None:
    taints = [
        Taint(key="soft", effect="PreferNoSchedule"),
        Taint(key="a", effect="NoSchedule"),
        Taint(key="b", effect="NoExecute"),
    ]
    assert first_untolerated(taints, [], DO_NOT_SCHEDULE) == taints[1]
    assert first_untolerated(taints, [Toleration(key="a", operator="Exists")], DO_NOT_SCHEDULE) == taints[2]
    assert first_untolerated(taints[:1], [], DO_NOT_SCHEDULE) is None
    assert first_untolerated(taints, [], {PREFER_NO_SCHEDULE}) == taints[0]


def test_batch_masks_over_a_table() -> None:
    table = make_table(
        [
            make_node("plain"),
            make_node("gpu", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
            make_node(
                "soft",
                taints=[{"key": "s1", "effect": "PreferNoSchedule"}, {"key": "s2", "effect": "PreferNoSchedule"}],
            ),
            make_node(
                "both",
                taints=[
                    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
                    {"key": "s1", "effect": "PreferNoSchedule"},
                ],
            ),
        ]
    )
    index = table.taint_index()
    rows = np.array([3, 1, 0, 2])
    assert any_untolerated(index, [], DO_NOT_SCHEDULE, rows).tolist() == [True, True, False, False]
    tolerate_gpu = [Toleration(key="gpu", operator="Exists")]
    assert any_untolerated(index, tolerate_gpu, DO_NOT_SCHEDULE, rows).tolist() == [False, False, False, False]
    assert count_untolerated(index, [], {PREFER_NO_SCHEDULE}, rows).tolist() == [1, 0, 0, 2]
    tolerate_s1 = [Toleration(key="s1", operator="Exists", effect="PreferNoSchedule")]
    assert count_untolerated(index, tolerate_s1, {PREFER_NO_SCHEDULE}, rows).tolist() == [0, 0, 0, 1]
