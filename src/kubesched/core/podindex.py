"""The node table's index of its pods for inter-pod affinity: pods grouped once, counted per topology value.

Every pod on the table falls in one `LabelSet` (pods of equal labels, what an affinity term's selector reads
of an existing pod), in it in the `PodGroup` of its namespace, and every pod with pod (anti-)affinity also in
a group of pods of equal terms (equal affinity, and equal namespace if a term defaults to the pod's own). A
group keeps how many of its pods sit on each row and, for each topology key asked about, how many per value
of that node label (the value codes of `NodeTable.label_codes`; for a group on few rows, as (code, pods)
pairs, `sparse`): so a plugin answers an incoming pod with one
selector check per label set and one array addition per matching group, instead of a walk over every pod
(kube-scheduler's per-cycle affinityCounts, antiAffinityCounts and existingAntiAffinityCounts keyed by
topology pair).

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

    __slots__ = ("_per_value", "_sparse", "namespace", "pod", "rows", "size")

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self.namespace = pod.namespace
        self.rows: dict[int, int] = {}  # row → pods of the group on it
        self.size = 0
        self._per_value: dict[str, Counts] = {}  # topology key → pods per value code
        self._sparse: dict[str, tuple[npt.NDArray[np.int32], Counts]] = {}  # the same as (codes, pods), for few rows

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

    def sparse(self, table: LabelSource, key: str) -> tuple[npt.NDArray[np.int32], Counts]:
        """`per_value` as the value codes the group's rows have for ``key`` and its pods there (codes repeat
        where rows share a value): what a group on few of many values adds without an array per value."""
        got = self._sparse.get(key)
        if got is None:
            codes = table.label_codes(key)[0]
            rows = np.fromiter(self.rows, dtype=np.intp, count=len(self.rows))
            weights = np.fromiter(self.rows.values(), dtype=np.int64, count=len(self.rows))
            at = codes[rows]
            inside = at >= 0
            got = self._sparse[key] = (at[inside], weights[inside])
        return got

    def _change(self, table: LabelSource, row: int, delta: int) -> None:
        if self._sparse:
            self._sparse.clear()
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
        self._sparse.clear()


def labels_key(pod: PodInfo) -> tuple[str, frozenset[tuple[str, str]]]:
    """What an affinity term reads of an existing pod: its namespace and labels."""
    key = pod.cache.get(_LABELS_KEY)
    if not isinstance(key, tuple):
        key = pod.cache[_LABELS_KEY] = (pod.namespace, frozenset(pod.labels.items()))
    return key


def affinity_key(pod: PodInfo) -> Hashable:
    """What makes two pods' affinity terms the same: the pod's affinity, and its namespace if a term defaults
    to it (one with neither ``namespaces`` nor a ``namespaceSelector``)."""
    key = pod.cache.get(_GROUP_KEY)
    if key is None:
        affinity = pod.pod.spec.affinity
        assert affinity is not None
        terms = (affinity.pod_affinity, affinity.pod_anti_affinity)
        key = pod.cache[_GROUP_KEY] = (pod.namespace if _defaults_namespace(pod) else None, _ENCODE.encode(terms))
    return key


def _defaults_namespace(pod: PodInfo) -> bool:
    affinity = pod.pod.spec.affinity
    assert affinity is not None
    for group in (affinity.pod_affinity, affinity.pod_anti_affinity):
        if group is None:
            continue
        required = group.required_during_scheduling_ignored_during_execution or ()
        preferred = [w.pod_affinity_term for w in group.preferred_during_scheduling_ignored_during_execution or ()]
        if any(not t.namespaces and t.namespace_selector is None for t in (*required, *preferred)):
            return True
    return False


class LabelSet:
    """The pods of one label set: per namespace (``namespaces``) and all of them together (``all``)."""

    __slots__ = ("all", "labels", "namespaces")

    def __init__(self, pod: PodInfo) -> None:
        self.labels: Mapping[str, str] = pod.labels
        self.all = PodGroup(pod)
        self.namespaces: dict[str, PodGroup] = {}


class PodIndex:
    """Pods by label set (and within it by namespace) and pods with affinity by their terms, with inverted
    indexes from a label pair and from a namespace to the label sets.

    Built from the table's pods the first time it is read, kept current from then on: a table no plugin
    asks about pays nothing per pod.
    """

    def __init__(self, table: LabelSource) -> None:
        self._table = table
        self._active = False
        self._generation = table.static_generation
        self.sets: dict[frozenset[tuple[str, str]], LabelSet] = {}
        self.by_terms: dict[Hashable, PodGroup] = {}
        # label pair → the label sets carrying it; namespace → the label sets of its pods
        self.by_pair: dict[tuple[str, str], dict[frozenset[tuple[str, str]], LabelSet]] = {}
        self.by_namespace: dict[str, dict[frozenset[tuple[str, str]], LabelSet]] = {}
        self._where: dict[tuple[int, str], tuple[LabelSet, PodGroup, PodGroup | None]] = {}

    def __len__(self) -> int:
        return len(self._where)

    def _fresh(self) -> None:
        # A node change may have moved rows between label values: rebuild the per-value counts on demand.
        generation = self._table.static_generation
        if generation != self._generation:
            self._generation = generation
            for label_set in self.sets.values():
                label_set.all.forget_values()
                for group in label_set.namespaces.values():
                    group.forget_values()
            for group in self.by_terms.values():
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

    def label_sets(self) -> Iterable[LabelSet]:
        return self.activate().sets.values()

    def term_groups(self) -> Iterable[PodGroup]:
        return self.activate().by_terms.values()

    def add(self, row: int, pod: PodInfo) -> None:
        if not self._active:
            return
        self._fresh()
        where = (row, pod.uid)
        if where in self._where:
            self.remove(row, pod.uid)
        namespace, labels = labels_key(pod)
        label_set = self.sets.get(labels)
        if label_set is None:
            label_set = self.sets[labels] = LabelSet(pod)
            for pair in labels:
                self.by_pair.setdefault(pair, {})[labels] = label_set
        group = label_set.namespaces.get(namespace)
        if group is None:
            group = label_set.namespaces[namespace] = PodGroup(pod)
            self.by_namespace.setdefault(namespace, {})[labels] = label_set
        group._change(self._table, row, 1)
        label_set.all._change(self._table, row, 1)
        terms = None
        if pod.has_pod_affinity:
            tkey = affinity_key(pod)
            terms = self.by_terms.get(tkey)
            if terms is None:
                terms = self.by_terms[tkey] = PodGroup(pod)
            terms._change(self._table, row, 1)
        self._where[where] = (label_set, group, terms)

    def remove(self, row: int, uid: str) -> None:
        if not self._active:
            return
        self._fresh()
        found = self._where.pop((row, uid), None)
        if found is None:
            return
        label_set, group, terms = found
        group._change(self._table, row, -1)
        label_set.all._change(self._table, row, -1)
        namespace, labels = labels_key(group.pod)
        if not group.size:
            del label_set.namespaces[namespace]
            del self.by_namespace[namespace][labels]
            if not self.by_namespace[namespace]:
                del self.by_namespace[namespace]
        if not label_set.all.size:
            del self.sets[labels]
            for pair in labels:
                del self.by_pair[pair][labels]
                if not self.by_pair[pair]:
                    del self.by_pair[pair]
        if terms is not None:
            terms._change(self._table, row, -1)
            if not terms.size:
                del self.by_terms[affinity_key(terms.pod)]

    def remove_row(self, row: int, uids: Iterable[str]) -> None:
        for uid in list(uids):
            self.remove(row, uid)
