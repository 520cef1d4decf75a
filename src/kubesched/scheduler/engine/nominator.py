"""Pods that preemption nominated to a node, until they are scheduled or gone (kube-scheduler's nominator)."""

from __future__ import annotations

from kubesched.core.podinfo import PodInfo


class Nominator:
    """Pods that preemption nominated to a node, until they are scheduled or gone."""

    def __init__(self) -> None:
        self._by_uid: dict[str, tuple[str, PodInfo]] = {}

    def __len__(self) -> int:
        return len(self._by_uid)

    def add(self, pod: PodInfo, node: str) -> None:
        self._by_uid[pod.uid] = (node, pod)

    def remove(self, uid: str) -> None:
        self._by_uid.pop(uid, None)

    def on(self, node: str) -> list[PodInfo]:
        """The pods nominated to ``node``."""
        return [p for n, p in self._by_uid.values() if n == node]

    def node_of(self, uid: str) -> str | None:
        entry = self._by_uid.get(uid)
        return entry[0] if entry else None

    def ahead_of(self, pod: PodInfo) -> list[tuple[str, PodInfo]]:
        """Nominated pods at least as important as ``pod`` (they keep their room on their node)."""
        return [(n, p) for n, p in self._by_uid.values() if p.priority >= pod.priority and p.uid != pod.uid]
