"""The recommender: rank every transferable schedule, time the few most promising, keep the best.

Data flow: kernels -> same-class source schedules applied, featurised (or found in the
``FeatureCache``) and ranked (``ranking``) -> a measurement budget spent where it is expected to
gain most (``Budget``) -> per kernel the fastest valid timed candidate, or, where nothing was
timed, the predicted best that passes the correctness check -> a MetaSchedule database.

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
from dataclasses import dataclass, field

import tvm
from tqdm import tqdm

from ..backend.measure import Stage
from ..core.targets import RemoteDevice
from ..learn.cost_models import SCREEN_KEEP
from ..learn.feature_cache import FeatureCache
from ..learn.model_files import CostModel
from ..logs.sources import SourceSchedule
from ..networks.network import Network
from ..tasks.extract import Task
from ..transfer.apply import Level
from ..transfer.candidate import LEVELS, Candidate
from ..transfer.exhaustive import extract
from ..transfer.timing import CHUNK, measure_jobs
from .ranking import RankedKernel, correct, rank_candidates

CHECK_ROUNDS = 4  # zero-measurement choice: how far down the ranking to look for a valid one
FIRST_BATCH = 8  # a time budget calibrates the cost of one measurement on a small first batch
GUESS_JOB_S = 0.5  # cost of one measurement before any was made
DEFAULT_GFLOPS = 10.0


@dataclass(frozen=True)
class Budget:
    """How much to measure: ``top_k`` per kernel, or ``trials`` / ``seconds`` for the network.

    ``top_k=0`` times nothing. Without any limit every candidate is timed (the paper's method).
    ``seconds`` caps the timing only: applying and ranking the candidates before it and checking
    the chosen ones after it come on top (the report's ``phases_s`` show each part).
    """

    top_k: int | None = None
    trials: int | None = None
    seconds: float | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass
class KernelChoice:
    task: Task
    ranked: RankedKernel | None  # None: no candidate of its pool applies
    untuned_s: float | None
    pool: list[Candidate] = field(default_factory=list)  # every candidate, applied or not
    chosen: Candidate | None = None
    how: str = "untuned: no candidate applies"

    @property
    def predicted_s(self) -> float | None:
        """The chosen schedule's time predicted from its home time, scaled by FLOPs."""
        if self.chosen is None:
            return None
        source = self.chosen.source
        return source.run_s * self.task.descriptor.flops / max(source.descriptor.flops, 1)

    @property
    def seconds(self) -> float | None:
        if self.chosen is None:
            return None
        return self.chosen.run_s if self.chosen.run_s is not None else self.predicted_s


@dataclass
class Recommendation:
    network: str
    target: tvm.target.Target
    prepared: tvm.IRModule
    budget: Budget
    kernels: list[KernelChoice]
    timings_s: dict[str, float] = field(default_factory=dict)
    untuned_timed: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def search_s(self) -> float:
        """Rank + measure + check. Task extraction is left out, as in ``TransferRun.search_s``:
        every method (MetaSchedule too) extracts the same tasks first."""
        return sum(v for k, v in self.timings_s.items() if k != "extract")

    @property
    def picks(self) -> list[tuple[Task, Candidate, float]]:
        return [(k.task, k.chosen, k.seconds) for k in self.kernels if k.chosen is not None]

    def candidates(self, state: str) -> int:
        every = [c for k in self.kernels if k.ranked for c in k.ranked.kernel.candidates]
        if state == "all":
            return len(every)
        if state == "ranked":  # applied and ranked by the full model, after the screen
            return sum(len(k.ranked.candidates) for k in self.kernels if k.ranked)
        if state == "timed":
            return sum(c.run_s is not None for c in every)
        return sum(c.failure is not None and c.failure.stage is not Stage.APPLY for c in every)


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


def choose(
    choices: list[KernelChoice], target: tvm.target.Target, remote: RemoteDevice | None = None
) -> None:
    """The fastest valid timed candidate per kernel; where none was timed, the predicted best
    that passes the correctness check (walking down the ranking for ``CHECK_ROUNDS``)."""
    pending = []
    for choice in choices:
        if choice.ranked is None:
            if not choice.pool:
                choice.how = "untuned: no same-class source schedule"
            continue
        choice.untuned_s = choice.ranked.kernel.untuned_s
        timed = choice.ranked.timed
        if timed:
            best = min(timed, key=lambda c: c.run_s)
            if choice.untuned_s is None or best.run_s < choice.untuned_s:
                choice.chosen, choice.how = best, "timed"
            else:
                choice.how = "untuned: faster than every timed candidate"
        else:
            pending.append(choice)
    for _ in range(CHECK_ROUNDS):
        checking = [(c, c.ranked.untried[0]) for c in pending if c.ranked.untried]
        if not checking:
            break
        measure_jobs(
            [(c.ranked.kernel, cand) for c, cand in checking], target, remote=remote, timed=False
        )
        for choice, candidate in checking:
            if candidate.measurement.ok:
                choice.chosen, choice.how = candidate, "predicted (checked, not timed)"
        pending = [c for c in pending if c.chosen is None]
    for choice in pending:
        choice.how = "untuned: no candidate passed the check"


def recommend(
    network: Network,
    target: tvm.target.Target,
    sources: list[SourceSchedule],
    model: CostModel,
    budget: Budget,
    *,
    family_of: dict[str, str],
    remote: RemoteDevice | None = None,
    cache: FeatureCache | None = None,
    progress: bool = True,
    levels: tuple[Level, ...] = LEVELS,
) -> Recommendation:
    """Rank, prune, time within ``budget``, and choose one schedule per kernel of ``network``
    among its pool of candidates at ``levels``.

    With a ``cache``, candidates ranked before are not applied again unless they are measured.
    """
    timings: dict[str, float] = {}
    start = time.perf_counter()
    prepared, kernels = extract(network, target, sources, levels=levels)
    timings["extract"] = time.perf_counter() - start

    every = budget.top_k is None and budget.trials is None and budget.seconds is None
    ranked = rank_candidates(
        kernels,
        model,
        target,
        family_of=family_of,
        target_family=network.family or "",
        cache=cache,
        keep=None if every else max(SCREEN_KEEP, budget.top_k or 0),
        timings=timings,
    )

    start = time.perf_counter()
    limit = _measurements(ranked, budget)
    with tqdm(total=limit, desc=f"{network.name}: time", unit="cand", disable=not progress) as bar:
        references = spend(
            ranked,
            budget,
            target,
            prior=position_prior(model),
            remote=remote,
            on_progress=bar.update,
        )
    timings["measure"] = time.perf_counter() - start

    by_task = {id(r.kernel.task): r for r in ranked}
    choices = [KernelChoice(k.task, by_task.get(id(k.task)), None, k.candidates) for k in kernels]
    start = time.perf_counter()
    choose(choices, target, remote)
    timings["check"] = time.perf_counter() - start

    result = Recommendation(network.name, target, prepared, budget, choices, timings, references)
    if budget.top_k != 0 and not result.candidates("timed") and ranked:
        result.notes.append(
            "the budget was too small to time any candidate: every choice is the cost model's "
            "prediction (zero-measurement mode), checked for correctness only"
        )
    untimed = sum(bool(r.untried) for r in ranked)
    if (budget.seconds is not None or budget.trials is not None) and untimed:
        result.notes.append(
            f"budget spent: {result.candidates('timed')} candidates timed; "
            f"{sum(len(r.untried) for r in ranked)} ranked candidates of {untimed} kernels "
            "were never timed"
        )
    return result


def _measurements(ranked: list[RankedKernel], budget: Budget) -> int | None:
    """How many candidates the budget allows at most (for the progress bar)."""
    every = sum(len(r.candidates) for r in ranked)
    if budget.top_k is not None:
        return sum(min(len(r.candidates), budget.top_k) for r in ranked)
    if budget.trials is not None:
        return min(every, budget.trials)
    return None if budget.seconds is not None else every
