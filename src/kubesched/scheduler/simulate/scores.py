"""The score distributions of a run: each scored cycle's normalized scores, per Score plugin, counted into
histograms as the cycle computes them (`Cycle.observe_scores`): bounded memory however many pods."""

from __future__ import annotations

import numpy as np

from kubesched.core.nodetable import IntColumn
from kubesched.framework.runtime import Framework
from kubesched.scheduler.simulate.model import BUCKETS, ScoreDistribution


class ScoreHistograms:
    def __init__(self) -> None:
        # (plugin, weight) -> [cycles, chosen histogram, scored histogram]
        self.seen: dict[tuple[str, int], tuple[list[int], np.ndarray, np.ndarray]] = {}

    def __call__(self, fw: Framework, normalized: list[IntColumn | None], best: int) -> None:
        for (plugin, weight), scores in zip(fw.score, normalized, strict=True):
            if scores is None:
                continue
            key = (plugin.name, weight)
            entry = self.seen.get(key)
            if entry is None:
                entry = self.seen[key] = ([0], np.zeros(BUCKETS, np.int64), np.zeros(BUCKETS, np.int64))
            buckets = np.clip(np.asarray(scores, dtype=np.int64) // 10, 0, BUCKETS - 1)
            entry[0][0] += 1
            entry[1][int(buckets[best])] += 1
            np.add(entry[2], np.bincount(buckets, minlength=BUCKETS), out=entry[2])

    def distributions(self) -> list[ScoreDistribution]:
        return [
            ScoreDistribution(plugin, weight, count[0], chosen.tolist(), scored.tolist())
            for (plugin, weight), (count, chosen, scored) in sorted(self.seen.items())
        ]
