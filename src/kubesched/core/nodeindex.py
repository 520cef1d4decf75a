"""Indexes the node table derives from its nodes' objects, rebuilt whole when what they read changes.

The distinct taints with the rows carrying each (TaintToleration, and the tolerations' checks in
tolerations.py), and the images the nodes report with their sizes (ImageLocality). `NodeTable` keeps them
until a node's taints or images change, or a row is added or removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api.core import Node, Taint

Rows = npt.NDArray[np.intp]
BoolColumn = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class TaintIndex:
    """The distinct taints of the table and, for each, the rows that carry it."""

    taints: tuple[Taint, ...]
    rows_with: tuple[BoolColumn, ...]


def taint_index(live: Iterable[tuple[int, Node]], size: int) -> TaintIndex:
    """The distinct taints of the ``live`` (row, node) pairs, each with a mask over ``size`` rows."""
    where: dict[tuple[str, str, str], list[int]] = {}
    first: dict[tuple[str, str, str], Taint] = {}
    for row, node in live:
        for t in node.spec.taints or ():
            k = (t.key, t.value, t.effect)
            where.setdefault(k, []).append(row)
            first.setdefault(k, t)
    masks = []
    for rows in where.values():
        m = np.zeros(size, dtype=np.bool_)
        m[rows] = True
        masks.append(m)
    return TaintIndex(tuple(first[k] for k in where), tuple(masks))


def image_index(live: Iterable[tuple[int, Node]]) -> dict[str, tuple[Rows, int]]:
    """Image name → (rows reporting it, size from the first row seen)."""
    where: dict[str, list[int]] = {}
    size: dict[str, int] = {}
    for row, node in live:
        for img in node.status.images or ():
            for name in img.names or ():
                where.setdefault(name, []).append(row)
                size.setdefault(name, img.size_bytes)
    return {k: (np.asarray(v, dtype=np.intp), size[k]) for k, v in where.items()}
