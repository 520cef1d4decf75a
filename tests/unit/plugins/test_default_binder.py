from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import ClusterAPIError, CycleState, Handle
from kubesched.framework.status import SUCCESS, Code, Status
from kubesched.plugins.default_binder import DefaultBinder
from kubesched.testing.builders import make_pod


class FakeCluster:
    """Records bindings; fails with ``error`` when set."""

    def __init__(self, error: str = "") -> None:
        self.error = error
        self.bound: list[tuple[str, str]] = []

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        if self.error:
            raise ClusterAPIError(self.error)
        self.bound.append((pod.key, node_name))

    async def evict(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> None:
        raise AssertionError("not used")

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        raise AssertionError("not used")

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return ()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return None


@pytest.mark.parametrize(
    ("error", "expected", "bound"),
    [
        ("", SUCCESS, [("default/p", "n1")]),
        (
            'pods "p" not found',
            Status(Code.ERROR, ('pods "p" not found',)),
            [],
        ),
    ],
    ids=["bound", "api-error"],
)
async def test_bind_through_the_cluster(error: str, expected: Status, bound: list[tuple[str, str]]) -> None:
    cluster = FakeCluster(error)
    plugin = DefaultBinder(handle=Handle(cluster=cluster))
    assert await plugin.bind(CycleState(), make_pod("p"), "n1") == expected
    assert cluster.bound == bound


async def test_without_a_cluster_binding_is_an_error() -> None:
    status = await DefaultBinder().bind(CycleState(), make_pod("p"), "n1")
    assert status == Status(Code.ERROR, ("no cluster to bind to",))
