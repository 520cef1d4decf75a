"""InterPodAffinity's counts per topology value, answered from the node table's pod index (core/podindex.py).

A count is an array per topology key over the value codes of that node label (`NodeTable.label_codes`):
kube-scheduler's topologyToMatchedTermCount, with the pair (key, value) read as (key, code). A term is
checked once per label set (its selector) and per namespace of it (its namespaces) instead of once per pod,
and only against the label sets that can match it: those carrying one of the values an ``Equals``/``In``
requirement asks for, or found in one of the listed namespaces of a term without a namespace selector. When
every namespace of a label set matches, its pods are counted at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from kubesched.core.nodetable import IntColumn, NodeTable, Rows
from kubesched.core.podindex import LabelSet, PodGroup, PodIndex
from kubesched.plugins.helpers.affinity_terms import AffinityTerm
from kubesched.plugins.helpers.label_selector import EQUALS, IN
from kubesched.plugins.helpers.spread_constraints import lookup

# Per topology key, counts per value code of that node label.
KeyCounts = dict[str, IntColumn]
NamespaceOf = Callable[[str], Mapping[str, str] | None]
_NONE: IntColumn = np.zeros(0, dtype=np.int64)


class Sums:
    """Groups' pods per topology value, weighted and summed per key. A group on many of the key's values adds
    its array of counts; one on few adds its (codes, pods) pairs, summed by one bincount at the end."""

    __slots__ = ("_dense", "_sparse", "touched")

    def __init__(self) -> None:
        self._dense: KeyCounts = {}
        self._sparse: dict[str, tuple[list[npt.NDArray[np.int32]], list[IntColumn]]] = {}
        self.touched = False  # some pod added sits on a node with the key (kube-scheduler's map not empty)

    def add(self, table: NodeTable, key: str, group: PodGroup, weight: int = 1) -> None:
        vocab = len(table.label_codes(key)[1])
        if 4 * len(group.rows) >= vocab:
            counts = group.per_value(table, key)
            if counts.any():
                self.touched = True
                have = self._dense.get(key)
                self._dense[key] = counts * weight if have is None else have + counts * weight
            return
        codes, pods = group.sparse(table, key)
        if len(codes):
            self.touched = True
            into = self._sparse.setdefault(key, ([], []))
            into[0].append(codes)
            into[1].append(pods * weight if weight != 1 else pods)

    def result(self, table: NodeTable) -> KeyCounts:
        """Per key, the sums per value code (as long as the key's vocabulary)."""
        out = dict(self._dense)
        for key, (codes, pods) in self._sparse.items():
            vocab = len(table.label_codes(key)[1])
            summed = np.bincount(np.concatenate(codes), np.concatenate(pods), minlength=vocab).astype(np.int64)
            have = out.get(key)
            out[key] = summed if have is None else summed + have
        return out


def bump_row(into: KeyCounts, table: NodeTable, key: str, row: int, delta: int) -> None:
    """Add ``delta`` at the value the node of ``row`` has for ``key`` (nothing when it has none)."""
    codes, vocab = table.label_codes(key)
    code = int(codes[row])
    if code < 0:
        return
    have = into.get(key)
    if have is None or len(have) <= code:
        grown = np.zeros(max(len(vocab), code + 1), dtype=np.int64)
        if have is not None:
            grown[: len(have)] = have
        have = into[key] = grown
    have[code] += delta


def any_count(counts: KeyCounts) -> bool:
    """Whether some topology pair has a count (kube-scheduler's ``len(m) > 0``: zeros are dropped there)."""
    return any(a.any() for a in counts.values())


def at(counts: KeyCounts, key: str, table: NodeTable, rows: Rows) -> IntColumn:
    """The count of each row's value for ``key`` (0 where the node has none)."""
    column, _ = table.label_codes(key)
    return lookup(counts.get(key, _NONE), column[rows])


def candidates(index: PodIndex, terms: Sequence[AffinityTerm]) -> Iterable[LabelSet]:
    """Label sets whose pods may match every term of ``terms`` (a superset: see `matching`)."""
    best: Mapping[frozenset[tuple[str, str]], LabelSet] | None = None
    for term in terms:
        if term.selector.nothing:
            return ()
        if term.namespace_selector.nothing:
            found = _union([index.by_namespace.get(ns, {}) for ns in term.namespaces])
            if best is None or len(found) < len(best):
                best = found
        for r in term.selector.requirements:
            if r.operator in (EQUALS, IN):
                found = _union([index.by_pair.get((r.key, v), {}) for v in r.values])
                if best is None or len(found) < len(best):
                    best = found
    return (index.sets if best is None else best).values()


def _union(
    found: list[dict[frozenset[tuple[str, str]], LabelSet]],
) -> Mapping[frozenset[tuple[str, str]], LabelSet]:
    if len(found) == 1:
        return found[0]
    out: dict[frozenset[tuple[str, str]], LabelSet] = {}
    for f in found:
        out.update(f)
    return out


def matching(terms: Sequence[AffinityTerm], label_set: LabelSet, namespace_of: NamespaceOf) -> list[PodGroup]:
    """The groups of ``label_set`` whose pods match every term: the whole set at once when all namespaces do."""
    if not all(t.selector.matches(label_set.labels) for t in terms):
        return []
    groups = label_set.namespaces
    hit = [g for ns, g in groups.items() if all(t.matches_namespace(ns, namespace_of(ns)) for t in terms)]
    if len(hit) > 1 and len(hit) == len(groups):
        return [label_set.all]
    return hit
