"""What the anchor level adds to a held-out network in the leave-one-model-out evaluation:
the pools' levels, and how often the ranker's first pick is an anchor-level transfer."""

from __future__ import annotations

import math

import numpy as np

from .features import FEATURE_NAMES
from .training import TrainingSet

ANCHOR_COLUMN = FEATURE_NAMES.index("l_anchor")  # 1 for an anchor-level candidate


def pool_levels(test: TrainingSet) -> dict[str, float]:
    """What the anchor level adds to a network's pools, whatever the ranker: the share of
    kernels with anchor-level candidates only (no source has their exact class), and the top-1
    score of the best exact candidate (weighted like ``topk``): where an exact-only pool, the
    paper's, stops."""
    anchor_only, exact_best, weights = 0, [], []
    for group, kernel in enumerate(test.kernels):
        rows = test.rows(group)
        run_s, anchor = test.run_s[rows], test.X[rows, ANCHOR_COLUMN] > 0.5
        ok, untuned = np.isfinite(run_s), kernel.untuned_s
        oracle = min(untuned, run_s[ok].min()) if ok.any() else untuned
        exact = ok & ~anchor
        if not math.isfinite(oracle):
            continue
        anchor_only += bool(anchor.all())
        exact_best.append(oracle / min(untuned, run_s[exact].min() if exact.any() else math.inf))
        weights.append(kernel.weight * untuned)
    if not weights:
        return {}
    return {
        "anchor_only_kernels": anchor_only / len(weights),
        "exact_only_top1": float(np.average(exact_best, weights=weights)),
    }


def first_pick_anchor(test: TrainingSet, scores: np.ndarray) -> float:
    """The share of kernels whose first-ranked candidate is an anchor-level transfer."""
    rows = map(test.rows, range(test.groups))
    picks = [test.X[r[np.argmax(scores[r])], ANCHOR_COLUMN] > 0.5 for r in rows]
    return float(np.mean(picks)) if picks else math.nan
