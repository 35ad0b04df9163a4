"""The recommender: rank every transferable schedule, time the few most promising, keep the best.

Data flow: kernels -> same-class source schedules applied, featurised (or found in the
``FeatureCache``) and ranked (``ranking``) -> a measurement budget spent where it is expected to
gain most (``Budget``) -> per kernel the fastest valid timed candidate, or, where nothing was
timed, the predicted best that passes the correctness check (or the untuned kernel, where the
cost model predicts that candidate slower than it: ``learn.untimed``) -> a MetaSchedule
database.

How much is timed, and where: ``budget``.

A kernel no source schedule reaches (or none of whose candidates passes) falls back to samples
of MetaSchedule's own design space for it (``transfer.apply.design_space``): timed against the
untuned kernel unless nothing is timed, checked for correctness always.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from enum import Enum

import tvm
from tqdm import tqdm

from ..backend.measure import Stage
from ..core.targets import RemoteDevice
from ..learn.cost_models import SCREEN_KEEP
from ..learn.feature_cache import FeatureCache
from ..learn.model_files import CostModel
from ..learn.untimed import CHECK_DEPTH, predicted_slower
from ..logs.sources import SourceSchedule
from ..networks.network import Network
from ..tasks.extract import Task
from ..transfer.apply import Level
from ..transfer.candidate import LEVELS, Candidate
from ..transfer.exhaustive import extract
from ..transfer.fallback import fall_back
from ..transfer.timing import measure_jobs
from .budget import DEFAULT_GFLOPS, Budget, position_prior, spend
from .ranking import RankedKernel, rank_candidates


class How(Enum):
    """How a kernel's schedule was chosen; the value is what reports print."""

    TIMED = "timed"
    PREDICTED = "predicted (checked, not timed)"
    DEFAULT_TIMED = "default: MetaSchedule's design space, timed"
    DEFAULT_CHECKED = "default: MetaSchedule's design space, checked, not timed"
    NO_SOURCE = "untuned: no same-class source schedule"
    NONE_APPLIES = "untuned: no candidate applies"
    NONE_PASSED = "untuned: no candidate passed the check"
    UNTUNED_FASTEST = "untuned: faster than every timed candidate"
    PREDICTED_SLOWER = "untuned: the predicted best is predicted slower than it (not timed)"

    @property
    def unreached(self) -> bool:
        """No candidate could serve (none of its class, none applies or passes), as opposed to
        the untuned kernel beating every timed one: a decision."""
        return self in (How.NO_SOURCE, How.NONE_APPLIES, How.NONE_PASSED)


@dataclass
class KernelChoice:
    task: Task
    ranked: RankedKernel | None  # None: no candidate of its pool applies
    untuned_s: float | None
    pool: list[Candidate] = field(default_factory=list)  # every candidate, applied or not
    chosen: Candidate | None = None
    how: How = How.NONE_APPLIES

    @property
    def predicted_s(self) -> float | None:
        """The chosen schedule's time predicted from its home time, scaled by FLOPs (None at
        the default level: no home time)."""
        if self.chosen is None or self.chosen.source is None:
            return None
        source = self.chosen.source
        return source.run_s * self.task.descriptor.flops / max(source.descriptor.flops, 1)

    @property
    def seconds(self) -> float | None:
        """The time the database records: measured, else predicted, else (an untimed default
        level schedule) the kernel's FLOPs at ``DEFAULT_GFLOPS``: TVM needs one."""
        if self.chosen is None:
            return None
        if self.chosen.run_s is not None:
            return self.chosen.run_s
        if self.predicted_s is not None:
            return self.predicted_s
        flops = self.task.descriptor.flops
        return max(flops if math.isfinite(flops) else 0.0, 1e3) / (DEFAULT_GFLOPS * 1e9)


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
        """How many candidates are ``all`` / ``ranked`` / ``timed`` / failed (else): those of
        the rankings and the default-level ones of kernels no source reached."""
        every = [c for k in self.kernels if k.ranked for c in k.ranked.kernel.candidates]
        every += [c for k in self.kernels for c in k.pool if c.level is Level.DEFAULT]
        if state == "all":
            return len(every)
        if state == "ranked":  # applied and ranked by the full model, after the screen
            return sum(len(k.ranked.candidates) for k in self.kernels if k.ranked)
        if state == "timed":
            return sum(c.run_s is not None for c in every)
        return sum(c.failure is not None and c.failure.stage is not Stage.APPLY for c in every)


def choose(
    choices: list[KernelChoice],
    target: tvm.target.Target,
    remote: RemoteDevice | None = None,
    *,
    timed: bool = True,
    default: bool = True,
) -> int:
    """The fastest valid timed candidate per kernel; where none was timed, the predicted best
    that passes the correctness check (walking down the ranking for ``CHECK_DEPTH``), unless
    the candidate it reaches is predicted slower than the untuned kernel
    (``learn.untimed.predicted_slower``); where no candidate is left and ``default``,
    MetaSchedule's design space (``fall_back``, ``timed`` or not). Returns how many untuned
    references that timed."""
    pending = []
    for choice in choices:
        if choice.ranked is None:
            if not choice.pool:
                choice.how = How.NO_SOURCE
            continue
        choice.untuned_s = choice.ranked.kernel.untuned_s
        if choice.ranked.timed:
            best = min(choice.ranked.timed, key=lambda c: c.run_s)
            if choice.untuned_s is None or best.run_s < choice.untuned_s:
                choice.chosen, choice.how = best, How.TIMED
            else:
                choice.how = How.UNTUNED_FASTEST
        else:
            pending.append(choice)
    for _ in range(CHECK_DEPTH):
        for choice in pending:
            if choice.ranked.untried and predicted_slower(
                choice.ranked.slower(choice.ranked.untried[0])
            ):
                choice.how = How.PREDICTED_SLOWER
        pending = [c for c in pending if c.how is not How.PREDICTED_SLOWER]
        checking = [(c, c.ranked.untried[0]) for c in pending if c.ranked.untried]
        if not checking:
            break
        measure_jobs(
            [(c.ranked.kernel, cand) for c, cand in checking], target, remote=remote, timed=False
        )
        for choice, candidate in checking:
            if candidate.measurement.ok:
                choice.chosen, choice.how = candidate, How.PREDICTED
        pending = [c for c in pending if c.chosen is None]
    for choice in pending:
        choice.how = How.NONE_PASSED
    unreached = [c for c in choices if default and c.how.unreached]
    known = [c.ranked.kernel.untuned if c.ranked else None for c in unreached]
    fallen = fall_back([c.task for c in unreached], target, remote, timed=timed, untuned=known)
    for choice, (kernel, chosen) in zip(unreached, fallen):
        choice.pool = [*choice.pool, *kernel.candidates]
        choice.untuned_s = kernel.untuned_s
        if chosen is not None:
            choice.chosen, choice.how = chosen, How.DEFAULT_TIMED if timed else How.DEFAULT_CHECKED
        elif any(c.run_s is not None for c in kernel.candidates):
            choice.how = How.UNTUNED_FASTEST
    return sum(k is None for k in known) if timed else 0


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
    references += choose(
        choices,
        target,
        remote,
        timed=budget.top_k != 0,
        default=Level.DEFAULT in levels,
    )
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
