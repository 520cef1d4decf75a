"""What the scheduler reads of the cluster beside nodes and pods: PodDisruptionBudgets (preemption spares
the pods they protect) and namespace labels (namespaceSelector terms of pod affinity).

Fed by list+watch (`source.scheduler_source`) or read from a cluster file; the scheduler's `ClusterAPI`
(`APIServerWriter`, `MemoryCluster`) answers `pdbs()` and `namespace_labels()` from it. Knows nothing of HTTP.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kubesched.api.core import Namespace
from kubesched.api.policy_v1 import PodDisruptionBudget


def _key(pdb: PodDisruptionBudget) -> str:
    return f"{pdb.metadata.namespace}/{pdb.metadata.name}"


class ClusterObjects:
    """PodDisruptionBudgets by namespace/name and namespace labels by name."""

    def __init__(self, pdbs: Iterable[PodDisruptionBudget] = (), namespaces: Iterable[Namespace] = ()) -> None:
        self._pdbs: dict[str, PodDisruptionBudget] = {}
        self._pdb_list: tuple[PodDisruptionBudget, ...] | None = None  # read per preemption, changed rarely
        self._namespaces: dict[str, dict[str, str]] = {}
        self.replace_pdbs(list(pdbs))
        self.replace_namespaces(list(namespaces))

    # ---- read -------------------------------------------------------------------------------------------

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        if self._pdb_list is None:
            self._pdb_list = tuple(self._pdbs.values())
        return self._pdb_list

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels; None when the namespace is not known."""
        return self._namespaces.get(namespace)

    # ---- fed by a watch ---------------------------------------------------------------------------------

    def replace_pdbs(self, items: list[PodDisruptionBudget]) -> None:
        self._pdbs = {_key(p): p for p in items}
        self._pdb_list = None

    def upsert_pdb(self, pdb: PodDisruptionBudget) -> None:
        self._pdbs[_key(pdb)] = pdb
        self._pdb_list = None

    def delete_pdb(self, pdb: PodDisruptionBudget) -> None:
        if self._pdbs.pop(_key(pdb), None) is not None:
            self._pdb_list = None

    def replace_namespaces(self, items: list[Namespace]) -> None:
        self._namespaces = {n.metadata.name: dict(n.metadata.labels or {}) for n in items}

    def upsert_namespace(self, namespace: Namespace) -> None:
        self._namespaces[namespace.metadata.name] = dict(namespace.metadata.labels or {})

    def delete_namespace(self, namespace: Namespace) -> None:
        self._namespaces.pop(namespace.metadata.name, None)
