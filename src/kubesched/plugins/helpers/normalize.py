"""Score helpers shared by in-tree plugins (pkg/scheduler/framework/plugins/helper)."""

from __future__ import annotations

import numpy as np

from kubesched.core.nodetable import IntColumn
from kubesched.framework.interfaces import MAX_NODE_SCORE


def default_normalize_score(scores: IntColumn, reverse: bool = False) -> IntColumn:
    """Scale non-negative scores so the highest becomes 100 (DefaultNormalizeScore); ``reverse`` flips them.

    When every score is 0 they stay 0, or all become 100 when reversed.
    """
    top = int(scores.max()) if len(scores) else 0
    if top <= 0:
        return np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64) if reverse else scores
    scaled = scores * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - scaled if reverse else scaled
