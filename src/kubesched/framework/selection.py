"""Choosing the node: the highest weighted total, ties broken at random (kube-scheduler's selectHost)."""

from __future__ import annotations

import random

import numpy as np

from kubesched.core.nodetable import IntColumn

_max_reduce = np.maximum.reduce  # the ufunc itself: skips ndarray.max's Python wrapper


def select_host(totals: IntColumn, rng: random.Random) -> int:
    """Index of the highest total, ties broken uniformly at random."""
    best = (totals == _max_reduce(totals)).nonzero()[0]
    return int(best[0]) if len(best) == 1 else int(best[rng.randrange(len(best))])
