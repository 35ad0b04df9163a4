"""Whether the ranker's untimed pick beats the untuned kernel, per kernel kind.

With nothing timed (``--top-k 0``, or a kernel a budget never reached) the recommender keeps
the ranker's first pick that passes the correctness check. On compute-bound kernels
(convolutions, matmuls) that pick is nearly always far faster than the naive untuned loops; on
memory-bound ones it is not: schedules tuned for other shapes make a max-pool or a reshape
several times slower than its untuned loops (on the Zen 4, GoogLeNet's untimed max-pool picks
cost 8 ms where the untuned kernels take 1.4). The cost model's own leave-one-model-out
evaluation measures this per kind; where the untimed picks of a kind ran slower in total than
its untuned kernels, an untimed choice keeps the untuned kernel. A total per kind is coarse: held
out, GoogLeNet's pools are not caught, as the other networks' pools transfer well among
themselves (the README's Zen 4 paragraph); a per-candidate prediction is the next step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..tasks.workload import kernel_kind

if TYPE_CHECKING:
    from .training import TrainingSet

CHECK_DEPTH = 4  # how far down its ranking an untimed choice looks for a candidate that passes
MIN_KERNELS = 3  # fewer held-out kernels of a kind say too little to overrule the ranker


def untimed_picks(test: TrainingSet, scores: np.ndarray) -> dict[str, list[float]]:
    """Per kernel kind of ``test``: [kernels, untuned seconds, picked seconds], each kernel
    weighted by its occurrences. The pick is the recommender's with nothing timed: the first
    of the ``CHECK_DEPTH`` best-scored candidates that ran, else the untuned kernel."""
    totals: dict[str, list[float]] = {}
    for group, kernel in enumerate(test.kernels):
        if not math.isfinite(kernel.untuned_s):
            continue
        rows = test.rows(group)
        ranked = test.run_s[rows][np.argsort(-scores[rows], kind="stable")[:CHECK_DEPTH]]
        ran = ranked[np.isfinite(ranked)]
        picked = float(ran[0]) if ran.size else kernel.untuned_s
        entry = totals.setdefault(kernel_kind(kernel.kernel_class), [0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += kernel.weight * kernel.untuned_s
        entry[2] += kernel.weight * picked
    return totals


def summary(per_network: list[dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """``untimed_picks`` of every held-out network, summed per kind (what a model's metadata
    keeps: ``evaluation.untimed``)."""
    kinds: dict[str, list[float]] = {}
    for totals in per_network:
        for kind, values in totals.items():
            kinds[kind] = [a + b for a, b in zip(kinds.get(kind, [0, 0.0, 0.0]), values)]
    return {
        kind: {"kernels": int(n), "untuned_ms": round(u * 1e3, 4), "picked_ms": round(p * 1e3, 4)}
        for kind, (n, u, p) in sorted(kinds.items())
    }


def losing_kinds(untimed: dict[str, dict[str, float]]) -> frozenset[str]:
    """The kinds whose untimed picks ran slower in total than their untuned kernels, over at
    least ``MIN_KERNELS`` held-out kernels."""
    return frozenset(
        kind
        for kind, seen in untimed.items()
        if seen["kernels"] >= MIN_KERNELS and seen["picked_ms"] > seen["untuned_ms"]
    )
