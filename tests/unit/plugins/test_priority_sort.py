from __future__ import annotations

import pytest

from kubesched.plugins.priority_sort import PrioritySort
from kubesched.testing.builders import make_pod


@pytest.mark.parametrize(
    ("queued", "expected"),
    [
        # (name, priority or None, queued_at)
        ([("a", 0, 2.0), ("b", 10, 3.0)], ["b", "a"]),
        ([("a", 5, 2.0), ("b", 5, 1.0)], ["b", "a"]),
        ([("a", None, 1.0), ("b", -1, 0.0), ("c", 0, 0.5)], ["c", "a", "b"]),
        ([("a", 1000, 9.0), ("b", 1000, 9.0), ("c", 2000, 10.0)], ["c", "a", "b"]),
    ],
    ids=["higher-priority-first", "equal-priority-earlier-first", "absent-priority-is-zero", "stable-on-full-tie"],
)
def test_sort_key_orders_the_active_queue(queued: list[tuple[str, int | None, float]], expected: list[str]) -> None:
    plugin = PrioritySort()
    pods = [(make_pod(name, priority=priority), at) for name, priority, at in queued]
    ordered = sorted(pods, key=lambda item: plugin.sort_key(*item))
    assert [p.name for p, _ in ordered] == expected
