"""What a choice made with nothing timed keeps: the ranker's pick, or the untuned kernel.

With nothing timed (``--top-k 0``, or a kernel a budget never reached) the recommender keeps
the ranker's first pick that passes the correctness check. On compute-bound kernels
(convolutions, matmuls) that pick is nearly always far faster than the naive untuned loops; on
memory-bound ones it often is not: schedules tuned for other shapes make a max-pool or a reshape
several times slower than its untuned loops (on the Zen 4, GoogLeNet's untimed max-pool picks
cost 7.9 ms where its untuned pools take 0.7). So the cost model has a classifier of
candidates that run no faster than the untuned kernel (``training``'s ``slower``); where the
candidate an untimed choice would check next is predicted slower, the choice keeps the untuned
kernel. A total per kernel kind was tried first and missed GoogLeNet: held out, the other
networks' pools transfer well among themselves; the classifier sees each candidate's shapes and
source.

The leave-one-model-out evaluation measures it per kernel kind (``untimed_picks``): the untuned
kernels, the ranker's picks alone and the picks the classifier lets through.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..tasks.workload import kernel_kind

if TYPE_CHECKING:
    from .training import TrainingSet

CHECK_DEPTH = 4  # how far down its ranking an untimed choice looks for a candidate that passes
SLOWER_THRESHOLD = 0.5  # P(slower than untuned) above which an untimed choice keeps untuned


def predicted_slower(p_slower: float) -> bool:
    """Whether an untimed choice keeps the untuned kernel rather than this candidate."""
    return p_slower > SLOWER_THRESHOLD


def untimed_pick(run_s: np.ndarray, p_slower: np.ndarray | None, untuned_s: float) -> float:
    """The time of what an untimed choice keeps, given its candidates' times (NaN: fails the
    check) in ranked order: walking down ``CHECK_DEPTH`` of them, the first that runs, unless
    the candidate it reaches is ``predicted_slower`` (None: no classifier), else untuned."""
    for i, seconds in enumerate(run_s[:CHECK_DEPTH]):
        if p_slower is not None and predicted_slower(p_slower[i]):
            break
        if math.isfinite(seconds):
            return float(seconds)
    return untuned_s


def untimed_picks(
    test: TrainingSet, scores: np.ndarray, p_slower: np.ndarray
) -> dict[str, list[float]]:
    """Per kernel kind of ``test``: [kernels, untuned, ranked, picked] seconds, each kernel
    weighted by its occurrences: ranked without the classifier, picked with ``p_slower``."""
    totals: dict[str, list[float]] = {}
    for group, kernel in enumerate(test.kernels):
        if not math.isfinite(kernel.untuned_s):
            continue
        rows = test.rows(group)
        order = rows[np.argsort(-scores[rows], kind="stable")]
        ranked = untimed_pick(test.run_s[order], None, kernel.untuned_s)
        picked = untimed_pick(test.run_s[order], p_slower[order], kernel.untuned_s)
        entry = totals.setdefault(kernel_kind(kernel.kernel_class), [0, 0.0, 0.0, 0.0])
        entry[0] += 1
        for i, seconds in enumerate((kernel.untuned_s, ranked, picked), start=1):
            entry[i] += kernel.weight * seconds
    return totals


def summary(per_network: list[dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """``untimed_picks`` of every held-out network, summed per kind, in milliseconds (what a
    model's metadata keeps: ``evaluation.untimed``)."""
    kinds: dict[str, list[float]] = {}
    for totals in per_network:
        for kind, values in totals.items():
            kinds[kind] = [a + b for a, b in zip(kinds.get(kind, [0, 0.0, 0.0, 0.0]), values)]
    names = ("untuned_ms", "ranked_ms", "picked_ms")
    return {
        kind: {"kernels": int(n), **{k: round(s * 1e3, 4) for k, s in zip(names, seconds)}}
        for kind, (n, *seconds) in sorted(kinds.items())
    }
