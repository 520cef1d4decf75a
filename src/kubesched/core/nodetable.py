"""The node table: every node as one row, its resources, labels and taints as numpy columns.

Plugins read columns and index them with a `rows` array (the candidate nodes), so a filter or a
score runs once per pod over all candidates instead of once per node. Columns are built lazily,
only for the resources and label keys some plugin asks for, then kept current row by row:

* static columns come from the Node object (allocatable, unschedulable, label value codes) and
  are recomputed for a row when that node changes;
* usage columns (requested, non-zero requested, pod count) are sums over the pods on the row and
  are updated in place by `add_pod` / `remove_pod` (an assumed pod counts from the moment it is
  added until it is removed).

Deleted nodes leave a tombstone row (``alive`` is False) that the next added node reuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from operator import itemgetter
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from kubesched.api.core import Node
from kubesched.core.nodecolumns import (
    alloc_key,
    alloc_of,
    cpu_column,
    parse_column,
    pod_usage,
    static_fields_differ,
    usage_key,
)
from kubesched.core.nodeindex import BoolColumn, Rows, TaintIndex, image_index, taint_index
from kubesched.core.nodetree import NodeTree
from kubesched.core.podindex import PodIndex
from kubesched.core.podinfo import HostPort, PodInfo

_EMPTY: dict[str, Any] = {}
IntColumn = npt.NDArray[np.int64]
__all__ = ["BoolColumn", "IntColumn", "NodeTable", "Rows", "TaintIndex", "table_of"]


class NodeTable:
    """Columnar store of nodes and the pods assigned (or assumed) on them."""

    def __init__(self, capacity: int = 64) -> None:
        self._cap = max(capacity, 1)
        self._n = 0
        self.names: list[str] = []
        self.nodes: list[Node | None] = []
        self.index: dict[str, int] = {}
        self._free: list[int] = []
        self._alive = np.zeros(self._cap, dtype=np.bool_)
        self._pods: list[dict[str, PodInfo]] = []
        self._static_int: dict[str, IntColumn] = {}
        self._label_codes: dict[str, tuple[npt.NDArray[np.int32], dict[str, int]]] = {}
        self._unschedulable: BoolColumn | None = None
        # status.declaredFeatures per row, interned: a code per row into the distinct sets seen.
        self._features: tuple[npt.NDArray[np.int32], dict[frozenset[str], int]] | None = None
        self._requested: dict[str, IntColumn] = {}
        self._taints: TaintIndex | None = None
        self._images: dict[str, tuple[Rows, int]] | None = None
        self.generation = 0
        # Bumped only when something plugins derive from node objects changes (not on pod changes
        # or node heartbeats); `derived` holds such results and is emptied then.
        self.static_generation = 0
        self.derived: dict[object, Any] = {}
        self._free_cols: dict[str, IntColumn] = {}  # by usage key, kept current row by row like the requested ones
        self._affinity_pods: dict[str, tuple[int, PodInfo]] = {}
        self.pod_index = PodIndex(self)  # pods grouped by labels and by affinity terms (core/podindex.py)
        self._names_gen = 0
        self._tree = NodeTree()  # kube-scheduler's node tree: rows per zone, for ordered_rows
        self._name_array: npt.NDArray[np.object_] | None = None
        self._name_array_gen = -1

    # ---- rows -------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of live nodes."""
        return len(self.index)

    @property
    def size(self) -> int:
        """Rows in use, tombstones included: the length of every column view."""
        return self._n

    def rows(self) -> Rows:
        """All live rows, in row order."""
        return np.flatnonzero(self._alive[: self._n])

    def ordered_rows(self) -> Rows:
        """All live rows, zones interleaved as kube-scheduler's node tree lists them: the first node of
        each zone, then the second of each, and so on (so a share of the nodes spans the zones)."""
        return self._tree.ordered_rows()

    def rows_for(self, names: list[str]) -> Rows:
        """Rows of the named nodes, in the given order; names this table does not know are left out."""
        # The lookups stay in C (itemgetter, map): this runs for every extender request.
        if len(names) > 1:
            try:
                found = itemgetter(*names)(self.index)
                return np.fromiter(found, dtype=np.intp, count=len(found))
            except KeyError:
                pass
        rows = np.fromiter(map(self.index.get, names, repeat(-1)), dtype=np.intp, count=len(names))
        return rows[rows >= 0]

    @property
    def names_generation(self) -> int:
        """Changes whenever a node is added or removed (so name-derived caches know to rebuild)."""
        return self._names_gen

    def name_array(self) -> npt.NDArray[np.object_]:
        """Node names as a numpy object array, so ``name_array()[rows].tolist()`` stays in C."""
        if self._name_array is None or self._name_array_gen != self._names_gen:
            self._name_array = np.array(self.names, dtype=object)
            self._name_array_gen = self._names_gen
        return self._name_array

    def node(self, row: int) -> Node:
        node = self.nodes[row]
        if node is None:
            raise KeyError(f"row {row} holds no node")
        return node

    def pods_on(self, row: int) -> dict[str, PodInfo]:
        """Pods on a row, by UID."""
        return self._pods[row]

    def live_nodes(self) -> Iterator[tuple[int, Node]]:
        for row, node in enumerate(self.nodes):
            if node is not None:
                yield row, node

    # ---- node changes ------------------------------------------------------------------------

    def _grow(self) -> None:
        self._cap *= 2

        def grown(a: npt.NDArray[np.generic], fill: object) -> npt.NDArray[np.generic]:
            out = np.full(self._cap, fill, dtype=a.dtype)
            out[: len(a)] = a
            return out

        self._alive = grown(self._alive, False)  # type: ignore[assignment]
        self._static_int = {k: grown(v, 0) for k, v in self._static_int.items()}  # type: ignore[misc]
        self._requested = {k: grown(v, 0) for k, v in self._requested.items()}  # type: ignore[misc]
        self._free_cols = {k: grown(v, 0) for k, v in self._free_cols.items()}  # type: ignore[misc]
        self._label_codes = {k: (grown(c, -1), vocab) for k, (c, vocab) in self._label_codes.items()}  # type: ignore[misc]
        if self._unschedulable is not None:
            self._unschedulable = grown(self._unschedulable, False)  # type: ignore[assignment]
        if self._features is not None:
            self._features = (grown(self._features[0], 0), self._features[1])  # type: ignore[assignment]

    def upsert(self, node: Node) -> int:
        """Add a node or replace the object of a known one; returns its row."""
        name = node.metadata.name
        row = self.index.get(name)
        if row is None:
            if self._free:
                row = self._free.pop()
                self.names[row] = name
                self.nodes[row] = node
                self._pods[row] = {}
            else:
                if self._n == self._cap:
                    self._grow()
                row = self._n
                self._n += 1
                self.names.append(name)
                self.nodes.append(node)
                self._pods.append({})
            self.index[name] = row
            self._names_gen += 1
            self._alive[row] = True
            for col in self._requested.values():
                col[row] = 0
            # Masks of the taint and image indexes are sized to the old row count.
            self._taints = None
            self._images = None
            self._static_changed()
        else:
            old = self.nodes[row]
            self.nodes[row] = node
            if old is not None and old.spec.taints != node.spec.taints:
                self._taints = None
            if old is not None and old.status.images != node.status.images:
                self._images = None
            if old is None or static_fields_differ(old, node):
                self._static_changed()
        self._refresh_static(row, node)
        self._tree.place(row, node)
        self.generation += 1
        return row

    def _static_changed(self) -> None:
        # A heartbeat-only update (conditions, timestamps) keeps what is derived from nodes valid.
        self.static_generation += 1
        self.derived.clear()

    def free(self, resource: str) -> IntColumn:
        """Allocatable minus requested per row (``pods``: pods that still fit), updated in place."""
        key = usage_key(resource)
        col = self._free_cols.get(key)
        if col is None:
            col = np.zeros(self._cap, dtype=np.int64)
            col[: self._n] = self.allocatable(resource) - self.requested(key)
            self._free_cols[key] = col
        return col[: self._n]

    def remove(self, name: str) -> int | None:
        """Delete a node; its row becomes a tombstone. Returns the row, or None if unknown."""
        row = self.index.pop(name, None)
        if row is None:
            return None
        self._names_gen += 1
        self._static_changed()
        self._tree.leave(row)
        node = self.nodes[row]
        self.nodes[row] = None
        self._alive[row] = False
        for uid in self._pods[row]:
            self._affinity_pods.pop(uid, None)
        self.pod_index.remove_row(row, self._pods[row])
        self._pods[row] = {}
        self._free.append(row)
        if node is not None and node.spec.taints:
            self._taints = None
        self._images = None
        for col in self._requested.values():
            col[row] = 0
        for col in self._free_cols.values():
            col[row] = 0
        self.generation += 1
        return row

    def _refresh_static(self, row: int, node: Node) -> None:
        for resource, col in self._static_int.items():
            col[row] = alloc_of(node, resource)
        for key, col in self._free_cols.items():
            col[row] = self.allocatable(alloc_key(key))[row] - self.requested(key)[row]
        if self._unschedulable is not None:
            self._unschedulable[row] = node.spec.unschedulable
        if self._features is not None:
            feature_codes, sets = self._features
            feature_codes[row] = sets.setdefault(frozenset(node.status.declared_features or ()), len(sets))
        labels = node.metadata.labels or {}
        for key, (codes, vocab) in self._label_codes.items():
            value = labels.get(key)
            codes[row] = -1 if value is None else vocab.setdefault(value, len(vocab))

    # ---- pod changes -------------------------------------------------------------------------

    def add_pod(self, row: int, pod: PodInfo) -> None:
        """Count a pod against a node (bound, or assumed by the scheduler)."""
        pods = self._pods[row]
        if pod.uid in pods:
            self._account(row, pods[pod.uid], -1)
        pods[pod.uid] = pod
        self._account(row, pod, +1)
        self.pod_index.add(row, pod)
        if pod.has_pod_affinity:
            self._affinity_pods[pod.uid] = (row, pod)
        self.generation += 1

    def remove_pod(self, row: int, uid: str) -> PodInfo | None:
        pod = self._pods[row].pop(uid, None)
        if pod is not None:
            self._account(row, pod, -1)
            self._affinity_pods.pop(uid, None)
            self.pod_index.remove(row, uid)
            self.generation += 1
        return pod

    def has_affinity_pods(self) -> bool:
        """Whether any pod on the table sets pod affinity or anti-affinity."""
        return bool(self._affinity_pods)

    def pods_with_affinity(self) -> list[tuple[int, PodInfo]]:
        """(row, pod) for the pods that set pod affinity or anti-affinity (kept as pods come and go,
        as kube-scheduler's cache keeps its PodsWithAffinity list, so no cycle walks every pod)."""
        return list(self._affinity_pods.values())

    def _account(self, row: int, pod: PodInfo, sign: int) -> None:
        usage = cast("dict[str, int] | None", pod.cache.get("#usage"))
        if usage is None:
            # Every usage key of the pod at once, kept on the pod: it is counted on assume, on bind
            # and on removal, each time against every column.
            usage = pod.cache["#usage"] = {
                **pod.requests,
                "#pods": 1,
                "#hostports": len(pod.host_ports),
                "nonzero:cpu": pod.non_zero_cpu,
                "nonzero:memory": pod.non_zero_memory,
            }
        for key, col in self._requested.items():
            amount = usage.get(key)
            if amount:
                col[row] += sign * amount
        for key, col in self._free_cols.items():
            amount = usage.get(key)
            if amount:
                col[row] -= sign * amount

    # ---- columns -----------------------------------------------------------------------------

    def _column(self, store: dict[str, IntColumn], key: str, per_row: Callable[[int], int]) -> IntColumn:
        col = store.get(key)
        if col is None:
            col = np.zeros(self._cap, dtype=np.int64)
            for row in range(self._n):
                if self.nodes[row] is not None:
                    col[row] = per_row(row)
            store[key] = col
        return col[: self._n]

    def allocatable(self, resource: str) -> IntColumn:
        """Allocatable amount of a resource per row (cpu in millicores), 0 where absent."""
        col = self._static_int.get(resource)
        if col is None:
            col = np.zeros(self._cap, dtype=np.int64)
            values = [None if n is None else (n.status.allocatable or _EMPTY).get(resource) for n in self.nodes]
            if resource == "cpu":
                col[: self._n] = cpu_column(values)
            else:
                col[: self._n] = parse_column(values, resource)
            self._static_int[resource] = col
        return col[: self._n]

    def requested(self, resource: str) -> IntColumn:
        """Sum of the pods' requests per row.

        Keys: a resource name, `nonzero:cpu`, `nonzero:memory`, `#pods` (pod count), `#hostports`
        (host ports the pods use, so port checks can visit only rows that have some).
        """
        col = self._requested.get(resource)
        if col is not None:
            return col[: self._n]
        return self._column(
            self._requested, resource, lambda row: sum(pod_usage(p, resource) for p in self._pods[row].values())
        )

    # One row's values as Python ints: scoring or filtering one node needs no arrays.

    def allocatable_at(self, resource: str, row: int) -> int:
        col = self._static_int.get(resource)
        return int((col if col is not None else self.allocatable(resource))[row])

    def requested_at(self, key: str, row: int) -> int:
        col = self._requested.get(key)
        return int((col if col is not None else self.requested(key))[row])

    def free_at(self, resource: str, row: int) -> int:
        col = self._free_cols.get(usage_key(resource))
        return int((col if col is not None else self.free(resource))[row])

    def pod_count(self) -> IntColumn:
        return self.requested("#pods")

    def unschedulable(self) -> BoolColumn:
        if self._unschedulable is None:
            col = np.zeros(self._cap, dtype=np.bool_)
            for row, node in self.live_nodes():
                col[row] = node.spec.unschedulable
            self._unschedulable = col
        return self._unschedulable[: self._n]

    def declared_features(self) -> tuple[npt.NDArray[np.int32], dict[frozenset[str], int]]:
        """Per row, the interned id of the node's status.declaredFeatures set, and the set → id map (id 0: none)."""
        if self._features is None:
            sets: dict[frozenset[str], int] = {frozenset(): 0}
            codes = np.zeros(self._cap, dtype=np.int32)
            for row, node in self.live_nodes():
                if node.status.declared_features:
                    codes[row] = sets.setdefault(frozenset(node.status.declared_features), len(sets))
            self._features = (codes, sets)
        return self._features[0][: self._n], self._features[1]

    def label_codes(self, key: str) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
        """Per row, the interned id of the value of label `key` (-1 where absent), and the value → id map."""
        entry = self._label_codes.get(key)
        if entry is None:
            vocab: dict[str, int] = {}
            codes = np.full(self._cap, -1, dtype=np.int32)
            for row, node in self.live_nodes():
                value = (node.metadata.labels or {}).get(key)
                if value is not None:
                    codes[row] = vocab.setdefault(value, len(vocab))
            entry = (codes, vocab)
            self._label_codes[key] = entry
        return entry[0][: self._n], entry[1]

    def taint_index(self) -> TaintIndex:
        """Distinct taints and which rows carry each (rebuilt only after a taint change)."""
        if self._taints is None:
            self._taints = taint_index(self.live_nodes(), self._n)
        return self._taints

    def image_index(self) -> dict[str, tuple[Rows, int]]:
        """Image name → (rows reporting it, size from the first row seen)."""
        if self._images is None:
            self._images = image_index(self.live_nodes())
        return self._images

    def used_host_ports(self, row: int) -> Iterator[HostPort]:
        for pod in self._pods[row].values():
            yield from pod.host_ports


def table_of(nodes: Iterable[Node]) -> NodeTable:
    """A table holding the given nodes, in order (rows 0..n-1); a repeated name keeps its first row."""
    nodes = list(nodes)
    table = NodeTable(capacity=len(nodes))
    names = [n.metadata.name for n in nodes]
    index = dict(zip(names, range(len(names)), strict=True))
    if len(index) != len(names):
        for node in nodes:
            if node.metadata.name not in table.index:
                table.upsert(node)
        return table
    # Bulk fill: the columns are built later, and only those some plugin reads.
    table.names, table.nodes, table.index = names, list(nodes), index
    table._n = len(nodes)
    table._pods = [{} for _ in nodes]
    table._alive[: table._n] = True
    table._names_gen += 1
    for row, node in enumerate(nodes):
        table._tree.place(row, node)
    return table
