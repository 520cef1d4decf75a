from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.status import SUCCESS, Code, Status
from kubesched.plugins.scheduling_gates import SchedulingGates
from kubesched.testing.builders import make_pod


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        (None, SUCCESS),
        ([], SUCCESS),
        (
            [{"name": "example.com/foo"}],
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates: [example.com/foo]",)),
        ),
        (
            [{"name": "g2"}, {"name": "g1"}],
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates: [g2 g1]",)),
        ),
    ],
    ids=["absent", "empty", "one-gate", "spec-order"],
)
def test_pre_enqueue(gates: list[dict[str, Any]] | None, expected: Status) -> None:
    assert SchedulingGates().pre_enqueue(make_pod(schedulingGates=gates)) == expected
