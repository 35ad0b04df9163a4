"""How much the recommender measures, and where: a ``Budget``, spent greedily by expected gain.

Expected gain of timing a kernel's next candidate = the kernel's estimated share of network
time (weight x FLOPs at the throughput seen so far, or its best measured time) x the chance
that the candidate at that rank is the kernel's best (the cost model's recall curve from its
leave-one-model-out evaluation, or a halving prior). Every batch of timings re-ranks the rest
(``ranking.correct``).
"""

from __future__ import annotations

import heapq
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import tvm

from ..core.targets import RemoteDevice
from ..learn.model_files import CostModel
from ..transfer.candidate import Candidate
from ..transfer.timing import CHUNK, measure_jobs
from .ranking import RankedKernel, correct

FIRST_BATCH = 8  # a time budget calibrates the cost of one measurement on a small first batch
GUESS_JOB_S = 0.5  # cost of one measurement before any was made
DEFAULT_GFLOPS = 10.0


@dataclass(frozen=True)
class Budget:
    """How much to measure: ``top_k`` per kernel, or ``trials`` / ``seconds`` for the network.

    ``top_k=0`` times nothing. Without any limit every candidate is timed (the paper's method).
    ``seconds`` caps the timing only: applying and ranking the candidates before it, checking
    the chosen ones after it and timing the default-level samples of kernels no source reaches
    come on top (the report's ``phases_s`` show each part).
    """

    top_k: int | None = None
    trials: int | None = None
    seconds: float | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None}


def position_prior(model: CostModel) -> Callable[[int], float]:
    """P(the candidate at rank r, 0-based, is the kernel's best), from the model's evaluation."""
    recall = model.metadata.get("evaluation", {}).get("recall_curve")
    if not recall:
        return lambda r: 0.5 ** (r + 1)
    steps = [recall[0]] + [max(b - a, 0.0) for a, b in zip(recall, recall[1:])]
    floor = max(min(steps[-1], 0.02), 1e-3)
    return lambda r: max(steps[r], floor) if r < len(steps) else floor * 0.5 ** (r - len(steps))


def _kernel_time(kernel: RankedKernel, gflops: float) -> float:
    timed = kernel.timed
    each = (
        min(c.run_s for c in timed)
        if timed
        else kernel.kernel.task.descriptor.flops / (gflops * 1e9)
    )
    return kernel.kernel.task.weight * each


def select(
    ranked: list[RankedKernel],
    size: int,
    *,
    top_k: int | None,
    prior: Callable[[int], float],
    gflops: float,
    reference_cost: int = 0,
) -> list[tuple[RankedKernel, Candidate]]:
    """Up to ``size`` measurements (candidates, plus ``reference_cost`` per untuned reference
    a kernel still needs), greedily by expected gain."""
    heap = []
    for i, kernel in enumerate(ranked):
        tried = len(kernel.candidates) - len(kernel.untried)
        if kernel.untried and (top_k is None or tried < top_k):
            heapq.heappush(heap, (-_kernel_time(kernel, gflops) * prior(tried), i, tried, 0))
    batch, used = [], 0
    while heap and used < size:
        _, i, tried, taken = heapq.heappop(heap)
        kernel = ranked[i]
        cost = 1 + (reference_cost if kernel.kernel.untuned is None and taken == 0 else 0)
        if used + cost > size:
            continue
        batch.append((kernel, kernel.untried[taken]))
        used += cost
        tried, taken = tried + 1, taken + 1
        if taken < len(kernel.untried) and (top_k is None or tried < top_k):
            gain = _kernel_time(kernel, gflops) * prior(tried)
            heapq.heappush(heap, (-gain, i, tried, taken))
    return batch


def _throughput(ranked: list[RankedKernel]) -> float:
    seen = [
        k.kernel.task.descriptor.flops / min(c.run_s for c in k.timed) for k in ranked if k.timed
    ]
    return statistics.median(seen) / 1e9 if seen else DEFAULT_GFLOPS


def spend(
    ranked: list[RankedKernel],
    budget: Budget,
    target: tvm.target.Target,
    *,
    prior: Callable[[int], float],
    remote: RemoteDevice | None = None,
    on_progress: Callable[[int], None] = lambda n: None,
) -> int:
    """Time candidates until the budget is spent; returns untuned references timed."""
    if budget.top_k == 0:
        return 0
    timed = references = 0
    spent, per_job = 0.0, None
    while True:
        size = CHUNK
        if budget.trials is not None:
            size = min(size, budget.trials - timed)
        if budget.seconds is not None:
            each = GUESS_JOB_S if per_job is None else per_job
            size = min(size, FIRST_BATCH if per_job is None else CHUNK)
            size = min(size, int((budget.seconds - spent) / each))
        if size <= 0:
            break
        batch = select(
            ranked,
            size,
            top_k=budget.top_k,
            prior=prior,
            gflops=_throughput(ranked),
            reference_cost=1 if budget.seconds is not None else 0,
        )
        if not batch:
            break
        needing = {id(k.kernel): k.kernel for k, _ in batch if k.kernel.untuned is None}
        jobs = [(kernel, None) for kernel in needing.values()]
        references += len(jobs)
        jobs += [(kernel.kernel, candidate) for kernel, candidate in batch]
        start = time.perf_counter()
        measure_jobs(jobs, target, remote=remote)
        spent += time.perf_counter() - start
        timed += len(batch)
        per_job = spent / (timed + references)
        correct(ranked)
        on_progress(len(batch))
    return references
