"""Rank each kernel's applied candidates with the cost model, and correct the ranks online.

Ranking has two stages when the model has a screen ranker: it orders all of a kernel's
candidates by what is known before applying them (shapes, home times, levels) and keeps the
best ``keep``; only those are applied, featurised and ranked by the full model. Applying is
what costs (14 ms a candidate; ResNet-50 has some 2000).

Scores are z-scored inside each kernel (a ranker's raw scores only order one group), and a
candidate the failure classifier expects to fail (P > 0.5) goes after all the others. Each
candidate also carries P(slower than the untuned kernel), which an untimed choice consults
(``learn.untimed``). As measurements arrive, ``correct`` re-ranks the untimed candidates of
same-class kernels: a source schedule that was fast where it was timed moves up elsewhere, one
that failed or was slow moves down.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import tvm

from ..core.interrupts import checkpoint
from ..learn.cost_models import SCREEN_KEEP
from ..learn.feature_cache import FeatureCache, candidate_key
from ..learn.features import FEATURE_NAMES, featurize, screen_matrix
from ..learn.model_files import CostModel
from ..logs.sources import SourceId
from ..tasks.extract import Task
from ..transfer.candidate import Candidate, KernelResult

FAIL_THRESHOLD = 0.5
CORRECTION = 2.0  # z-score units per unit of measured normalised throughput above the mean


@dataclass
class RankedKernel:
    """One kernel with its applied candidates in predicted order (best first)."""

    kernel: KernelResult
    candidates: list[Candidate]
    scores: np.ndarray  # z-scored model score, aligned with ``candidates``
    p_fail: np.ndarray
    p_slower: np.ndarray = field(default=None)  # None: a model without that classifier
    bonus: np.ndarray = field(default=None)  # online correction, aligned with ``candidates``

    def __post_init__(self):
        if self.bonus is None:
            self.bonus = np.zeros(len(self.candidates))
        if self.p_slower is None:
            self.p_slower = np.zeros(len(self.candidates))
        self._sort()
        self.initial_rank = {id(c): i for i, c in enumerate(self.candidates)}

    def _sort(self) -> None:
        key = self.scores + self.bonus - 1e3 * (self.p_fail > FAIL_THRESHOLD)
        order = np.argsort(-key, kind="stable")
        self.candidates = [self.candidates[i] for i in order]
        self.scores, self.p_fail, self.p_slower, self.bonus = (
            self.scores[order],
            self.p_fail[order],
            self.p_slower[order],
            self.bonus[order],
        )

    @property
    def untried(self) -> list[Candidate]:
        """Candidates not measured or checked yet, in the current order."""
        return [c for c in self.candidates if c.measurement is None]

    @property
    def timed(self) -> list[Candidate]:
        return [c for c in self.candidates if c.run_s is not None]

    def slower(self, candidate: Candidate) -> float:
        """P(``candidate`` runs no faster than the untuned kernel, or fails)."""
        return float(self.p_slower[self._index(candidate)])

    def explain(self, candidate: Candidate) -> dict:
        """Where the model put ``candidate``: its rank before any measurement, score, P(fail),
        P(slower than untuned)."""
        i = self._index(candidate)
        return {
            "initial_rank": self.initial_rank[id(candidate)],
            "score": round(float(self.scores[i]), 3),
            "correction": round(float(self.bonus[i]), 3),
            "p_fail": round(float(self.p_fail[i]), 3),
            "p_slower": round(float(self.p_slower[i]), 3),
        }

    def _index(self, candidate: Candidate) -> int:
        return next(i for i, c in enumerate(self.candidates) if c is candidate)


def rank_candidates(
    kernels: list[KernelResult],
    model: CostModel,
    target: tvm.target.Target,
    *,
    family_of: dict[str, str],
    target_family: str,
    cache: FeatureCache | None = None,
    keep: int | None = SCREEN_KEEP,
    timings: dict[str, float] | None = None,
    workers: int | None = None,
) -> list[RankedKernel]:
    """Score every candidate that applies among the ``keep`` best of each kernel's screen
    (None: all of them). Apply outcomes and features come from ``cache`` where it has them;
    the rest are applied, featurised and stored there, one kernel per thread on ``workers``
    threads (default: this machine's cores): TVM releases the GIL in its calls, and kernels share
    no schedule state. ``timings`` gets each stage's wall seconds (``screen``, ``rank``)."""
    start = time.perf_counter()
    kept = []
    for kernel in kernels:
        checkpoint()
        kept.append(screen(kernel, model, keep, family_of=family_of, target_family=target_family))
    spent = {"screen": time.perf_counter() - start}
    start = time.perf_counter()

    def features(kernel: KernelResult, candidates: list[Candidate]) -> np.ndarray:
        return _features(kernel.task, candidates, target, family_of, target_family, cache)

    ranked = []
    pool = ThreadPoolExecutor(workers or len(os.sched_getaffinity(0)))
    try:
        for kernel, candidates, X in zip(kernels, kept, pool.map(features, kernels, kept)):
            checkpoint()
            applied = [c for c in candidates if c.applies]
            if applied:
                raw = model.ranker.predict(X)
                scores = (raw - raw.mean()) / (raw.std() or 1.0)
                p_fail = model.failure.predict_proba(X)
                p_slower = model.slower.predict_proba(X) if model.slower else None
                ranked.append(RankedKernel(kernel, applied, scores, p_fail, p_slower))
    finally:
        pool.shutdown(cancel_futures=True)  # a stop waits for the kernels in flight only
    spent["rank"] = time.perf_counter() - start
    if timings is not None:
        timings.update(spent)
    return ranked


def screen(
    kernel: KernelResult,
    model: CostModel,
    keep: int | None,
    *,
    family_of: dict[str, str],
    target_family: str,
) -> list[Candidate]:
    """The first stage: the kernel's ``keep`` candidates the screen ranker puts first, in pool
    order (all of them without a screen ranker, or with no more than ``keep``)."""
    candidates = kernel.candidates
    if model.screen is None or keep is None or len(candidates) <= keep:
        return candidates
    X = screen_matrix(
        kernel.task,
        [(c.source, c.level) for c in candidates],
        family_of=family_of,
        target_family=target_family,
    )
    best = np.sort(np.argsort(-model.screen.predict(X), kind="stable")[:keep])
    return [candidates[i] for i in best]


def _features(
    task: Task,
    candidates: list[Candidate],
    target: tvm.target.Target,
    family_of: dict[str, str],
    target_family: str,
    cache: FeatureCache | None,
) -> np.ndarray:
    """Feature rows of the ``candidates`` that apply, in candidate order."""
    keys = {
        id(c): candidate_key(
            c.source, bool(target_family) and family_of.get(c.source.model) == target_family
        )
        for c in candidates
    }

    def key(c: Candidate) -> str:
        return keys[id(c)]

    cached = cache.load(task, target) if cache else {}
    for c in candidates:
        if key(c) in cached:
            c.known, c.known_reason = True, cached[key(c)][0]
    missing = [c for c in candidates if key(c) not in cached]
    fresh = [c for c in missing if c.applies]
    X = featurize(
        task,
        [(c.source, c.applied, c.level) for c in fresh],
        target,
        family_of=family_of,
        target_family=target_family,
    )
    rows = {key(c): (c.apply_reason, None) for c in missing}
    rows.update({key(c): (None, row) for c, row in zip(fresh, X)})
    if cache:
        cache.store(task, target, rows)
    rows.update(cached)
    width = len(FEATURE_NAMES)
    return np.asarray([rows[key(c)][1] for c in candidates if c.applies]).reshape(-1, width)


def _throughputs(kernel: RankedKernel) -> dict[SourceId, float]:
    """Measured normalised throughput per source record (0 = failed) in one kernel."""
    measured = [c for c in kernel.candidates if c.measurement is not None and c.measurement.run_s]
    failed = [c for c in kernel.candidates if c.measurement is not None and not c.measurement.ok]
    if not measured:
        return {c.source.id: 0.0 for c in failed}
    best = min(c.run_s for c in measured)
    values = {c.source.id: best / c.run_s for c in measured}
    values.update({c.source.id: 0.0 for c in failed})
    return values


def correct(ranked: list[RankedKernel]) -> None:
    """Online correction: move untimed candidates by how their source did on same-class kernels."""
    by_class: dict[str, list[dict[SourceId, float]]] = {}
    for kernel in ranked:
        by_class.setdefault(kernel.kernel.task.kernel_class.key, []).append(_throughputs(kernel))
    for kernel in ranked:
        observed = [t for t in by_class[kernel.kernel.task.kernel_class.key] if t]
        if not observed:
            continue
        mean = float(np.mean([v for t in observed for v in t.values()]))
        for i, candidate in enumerate(kernel.candidates):
            if candidate.measurement is not None:
                continue
            seen = [t[candidate.source.id] for t in observed if candidate.source.id in t]
            kernel.bonus[i] = CORRECTION * (float(np.mean(seen)) - mean) if seen else 0.0
        kernel._sort()
