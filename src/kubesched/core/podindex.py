"""The node table's index of its pods for inter-pod affinity: pods grouped once, counted per topology value.

Every pod on the table falls in one `PodGroup` of pods of equal namespace and labels (what an affinity
term's selector reads of an existing pod), and every pod with pod (anti-)affinity also in one of pods of
equal namespace and affinity (their terms are the same). A group keeps how many of its pods sit on each
row and, for each topology key asked about, how many per value of that node label (the value codes of
`NodeTable.label_codes`): so a plugin answers an incoming pod with one selector check per group and one
array addition per matching group, instead of a walk over every pod (kube-scheduler's per-cycle
affinityCounts, antiAffinityCounts and existingAntiAffinityCounts keyed by topology pair).

The index changes as pods are added, assumed, removed or forgotten (`NodeTable.add_pod`/`remove_pod`),
each change adding to the counts already built; the per-value counts are rebuilt from the rows only after
a node change that may have changed a row's label values (the table's ``static_generation``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.core.podinfo import PodInfo

Counts = npt.NDArray[np.int64]
_GROUP_KEY = "#affinity-group"
_LABELS_KEY = "#label-group"
_ENCODE = msgspec.json.Encoder()


class LabelSource(Protocol):
    """What the index reads of its table: per row, the code of a node label's value."""

    static_generation: int

    def label_codes(self, key: str) -> tuple[npt.NDArray[np.int32], dict[str, int]]: ...

    def rows(self) -> npt.NDArray[np.intp]: ...

    def pods_on(self, row: int) -> dict[str, PodInfo]: ...


class PodGroup:
    """Pods equal in what the index groups them by: one of them stands for all (``pod``)."""

    __slots__ = ("_per_value", "namespace", "pod", "rows", "size")

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self.namespace = pod.namespace
        self.rows: dict[int, int] = {}  # row → pods of the group on it
        self.size = 0
        self._per_value: dict[str, Counts] = {}  # topology key → pods per value code

    @property
    def labels(self) -> Mapping[str, str]:
        return self.pod.labels

    def per_value(self, table: LabelSource, key: str) -> Counts:
        """Pods of the group per value code of node label ``key`` (at least as long as the key's vocabulary)."""
        counts = self._per_value.get(key)
        codes, vocab = table.label_codes(key)
        if counts is None:
            rows = np.fromiter(self.rows, dtype=np.intp, count=len(self.rows))
            weights = np.fromiter(self.rows.values(), dtype=np.int64, count=len(self.rows))
            at = codes[rows]
            inside = at >= 0
            counts = np.bincount(at[inside], weights[inside], minlength=len(vocab)).astype(np.int64)
            self._per_value[key] = counts
        elif len(counts) < len(vocab):
            counts = self._per_value[key] = np.concatenate([counts, np.zeros(len(vocab) - len(counts), np.int64)])
        return counts

    def _change(self, table: LabelSource, row: int, delta: int) -> None:
        n = self.rows.get(row, 0) + delta
        if n:
            self.rows[row] = n
        else:
            del self.rows[row]
        self.size += delta
        for key in self._per_value:
            code = int(table.label_codes(key)[0][row])
            if code >= 0:
                self.per_value(table, key)[code] += delta

    def forget_values(self) -> None:
        self._per_value.clear()


def labels_key(pod: PodInfo) -> Hashable:
    """What an affinity term reads of an existing pod: its namespace and labels."""
    key = pod.cache.get(_LABELS_KEY)
    if key is None:
        key = pod.cache[_LABELS_KEY] = (pod.namespace, frozenset(pod.labels.items()))
    return key


def affinity_key(pod: PodInfo) -> Hashable:
    """What makes two pods' affinity terms the same: the namespace (a term's default) and the pod's affinity."""
    key = pod.cache.get(_GROUP_KEY)
    if key is None:
        affinity = pod.pod.spec.affinity
        assert affinity is not None
        terms = (affinity.pod_affinity, affinity.pod_anti_affinity)
        key = pod.cache[_GROUP_KEY] = (pod.namespace, _ENCODE.encode(terms))
    return key


class PodIndex:
    """Pods by (namespace, labels) and pods with affinity by (namespace, affinity), with an inverted index.

    Built from the table's pods the first time it is read, kept current from then on: a table no plugin
    asks about pays nothing per pod.
    """

    def __init__(self, table: LabelSource) -> None:
        self._table = table
        self._active = False
        self._generation = table.static_generation
        self.by_labels: dict[Hashable, PodGroup] = {}
        self.by_terms: dict[Hashable, PodGroup] = {}
        # label pair → the label groups carrying it; namespace → its label groups
        self.by_pair: dict[tuple[str, str], dict[Hashable, PodGroup]] = {}
        self.by_namespace: dict[str, dict[Hashable, PodGroup]] = {}
        self._where: dict[tuple[int, str], tuple[PodGroup, PodGroup | None]] = {}

    def __len__(self) -> int:
        return len(self._where)

    def _fresh(self) -> None:
        # A node change may have moved rows between label values: rebuild the per-value counts on demand.
        generation = self._table.static_generation
        if generation != self._generation:
            self._generation = generation
            for group in (*self.by_labels.values(), *self.by_terms.values()):
                group.forget_values()

    def activate(self) -> PodIndex:
        """Start indexing (from the pods on the table now); returns the index."""
        if not self._active:
            self._active = True
            for row in self._table.rows().tolist():
                for pod in self._table.pods_on(row).values():
                    self.add(row, pod)
        self._fresh()
        return self

    def label_groups(self) -> Iterable[PodGroup]:
        return self.activate().by_labels.values()

    def term_groups(self) -> Iterable[PodGroup]:
        return self.activate().by_terms.values()

    def add(self, row: int, pod: PodInfo) -> None:
        if not self._active:
            return
        self._fresh()
        where = (row, pod.uid)
        if where in self._where:
            self.remove(row, pod.uid)
        key = labels_key(pod)
        group = self.by_labels.get(key)
        if group is None:
            group = self.by_labels[key] = PodGroup(pod)
            self.by_namespace.setdefault(pod.namespace, {})[key] = group
            for pair in pod.labels.items():
                self.by_pair.setdefault(pair, {})[key] = group
        group._change(self._table, row, 1)
        terms = None
        if pod.has_pod_affinity:
            tkey = affinity_key(pod)
            terms = self.by_terms.get(tkey)
            if terms is None:
                terms = self.by_terms[tkey] = PodGroup(pod)
            terms._change(self._table, row, 1)
        self._where[where] = (group, terms)

    def remove(self, row: int, uid: str) -> None:
        if not self._active:
            return
        self._fresh()
        found = self._where.pop((row, uid), None)
        if found is None:
            return
        group, terms = found
        group._change(self._table, row, -1)
        if not group.size:
            key = labels_key(group.pod)
            del self.by_labels[key]
            del self.by_namespace[group.namespace][key]
            if not self.by_namespace[group.namespace]:
                del self.by_namespace[group.namespace]
            for pair in group.labels.items():
                del self.by_pair[pair][key]
                if not self.by_pair[pair]:
                    del self.by_pair[pair]
        if terms is not None:
            terms._change(self._table, row, -1)
            if not terms.size:
                del self.by_terms[affinity_key(terms.pod)]

    def remove_row(self, row: int, uids: Iterable[str]) -> None:
        for uid in list(uids):
            self.remove(row, uid)
