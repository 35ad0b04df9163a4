"""Candidates: a source schedule for a target kernel, applied on first use, and each kernel's
pool of them: every source schedule of its exact class, and at the anchor level those of the
``ANCHOR_NEIGHBOURS`` source workloads nearest in shape whose anchor block matches (a pad or
an epilogue of their own does not keep them out). A kernel no source reaches gets the
``default_candidates``: samples of MetaSchedule's design space, with no source."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import tvm

from ..backend.measure import Failure, Measurement, Stage
from ..core.lazy import lazy
from ..logs.sources import SourceSchedule
from ..tasks.extract import Task
from ..tasks.workload import WorkloadDescriptor
from .apply import Applied, Level, apply_trace, design_space

ANCHOR_NEIGHBOURS = 8  # source workloads per kernel at the anchor level, nearest first
LEVELS = (Level.EXACT, Level.ANCHOR, Level.DEFAULT)  # the default level: no source reaches


@dataclass(eq=False)
class Candidate:
    """A source schedule for a target kernel. It is applied on first use of ``applied``; until
    then ``known_reason`` (from the feature cache) may already say whether it applies. At the
    default level there is no source: ``space`` names the design-space sample."""

    source: SourceSchedule | None
    task_mod: tvm.IRModule
    target: tvm.target.Target
    level: Level = Level.EXACT
    known_reason: str | None = None
    known: bool = False
    measurement: Measurement | None = None
    space: int = 0

    @lazy
    def applied(self) -> Applied:
        if self.source is None:
            return design_space(self.task_mod, self.target)[self.space]
        return apply_trace(self.source.trace, self.task_mod, self.target, level=self.level)

    @property
    def label(self) -> str:
        if self.source is None:
            return f"MetaSchedule's design space, sample {self.space}"
        return self.source.label

    @property
    def apply_reason(self) -> str | None:
        if self.known and "applied" not in self.__dict__:
            return self.known_reason
        return self.applied.reason

    @property
    def applies(self) -> bool:
        return self.apply_reason is None

    @property
    def run_s(self) -> float | None:
        return self.measurement.run_s if self.measurement and self.measurement.ok else None

    @property
    def failure(self) -> Failure | None:
        if not self.applies:
            return Failure(Stage.APPLY, self.apply_reason)
        return self.measurement.failure if self.measurement else None


@dataclass
class KernelResult:
    task: Task
    candidates: list[Candidate]
    untuned: Measurement | None = None

    @property
    def untuned_s(self) -> float | None:
        return self.untuned.run_s if self.untuned and self.untuned.ok else None

    @property
    def best(self) -> Candidate | None:
        """The fastest valid candidate, if it beats the untuned kernel."""
        timed = [c for c in self.candidates if c.run_s is not None]
        if not timed:
            return None
        best = min(timed, key=lambda c: c.run_s)
        untuned = self.untuned_s
        return best if untuned is None or best.run_s < untuned else None


def shape_distance(a: WorkloadDescriptor, b: WorkloadDescriptor) -> float:
    """How far apart two anchors' iteration spaces are: summed |log2| of their extent ratios."""
    return sum(
        abs(math.log2(max(x, 1)) - math.log2(max(y, 1)))
        for x, y in zip(a.anchor_extents, b.anchor_extents)
    )


class SourceIndex:
    """Source schedules indexed by exact and by anchor class, to pick each kernel's pool."""

    def __init__(self, sources: Iterable[SourceSchedule]):
        self.by_class: dict[str, list[SourceSchedule]] = {}
        self.by_anchor: dict[str, list[SourceSchedule]] = {}
        for source in sources:
            self.by_class.setdefault(source.kernel_class.key, []).append(source)
            if source.kernel_class.anchor:
                self.by_anchor.setdefault(source.kernel_class.anchor, []).append(source)

    def pool(
        self, task: Task, levels: tuple[Level, ...] = LEVELS
    ) -> list[tuple[SourceSchedule, Level]]:
        """``task``'s candidates: (source, level), exact ones first."""
        klass = task.kernel_class
        pool = []
        if Level.EXACT in levels:
            pool += [(s, Level.EXACT) for s in self.by_class.get(klass.key, [])]
        if Level.ANCHOR in levels and klass.anchor:
            others = [s for s in self.by_anchor.get(klass.anchor, []) if s.kernel_class != klass]
            distance = {
                s.workload_key: shape_distance(task.descriptor, s.descriptor) for s in others
            }
            nearest = set(sorted(distance, key=distance.get)[:ANCHOR_NEIGHBOURS])
            pool += [(s, Level.ANCHOR) for s in others if s.workload_key in nearest]
        return pool


def apply_candidates(
    tasks: list[Task],
    sources: list[SourceSchedule],
    target: tvm.target.Target,
    *,
    levels: tuple[Level, ...] = LEVELS,
) -> list[KernelResult]:
    """Every task's pool of candidates (``SourceIndex.pool``), to be applied on first use."""
    index = SourceIndex(sources)
    return [
        KernelResult(
            task, [Candidate(s, task.mod, target, level) for s, level in index.pool(task, levels)]
        )
        for task in tasks
    ]


def default_candidates(task: Task, target: tvm.target.Target) -> list[Candidate]:
    """``task``'s samples of MetaSchedule's design space, as candidates without a source."""
    spaces = design_space(task.mod, target)
    return [Candidate(None, task.mod, target, Level.DEFAULT, space=i) for i in range(len(spaces))]


def apply_all(kernels: list[KernelResult]) -> None:
    """Apply every candidate now (failures are kept with their reason)."""
    for kernel in kernels:
        for candidate in kernel.candidates:
            candidate.applied  # noqa: B018 - the property applies and keeps the result


Job = tuple[KernelResult, "Candidate | None"]  # None: the kernel's untuned workload


def outcome(job: Job) -> Measurement | None:
    """The job's measurement, None until measured."""
    kernel, candidate = job
    return kernel.untuned if candidate is None else candidate.measurement
