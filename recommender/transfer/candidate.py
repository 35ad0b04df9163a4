"""Candidates: a source schedule for a target kernel, applied on first use, and each kernel's
pool of them (every same-class source schedule)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import tvm

from ..backend.measure import Failure, Measurement, Stage
from ..logs.sources import SourceSchedule
from ..tasks.extract import Task
from .apply import Applied, apply_trace


@dataclass(eq=False)
class Candidate:
    """A source schedule for a target kernel. It is applied on first use of ``applied``; until
    then ``known_reason`` (from the feature cache) may already say whether it applies."""

    source: SourceSchedule
    task_mod: tvm.IRModule
    target: tvm.target.Target
    known_reason: str | None = None
    known: bool = False
    measurement: Measurement | None = None

    @cached_property
    def applied(self) -> Applied:
        return apply_trace(self.source.trace, self.task_mod, self.target)

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


def apply_candidates(
    tasks: list[Task], sources: list[SourceSchedule], target: tvm.target.Target
) -> list[KernelResult]:
    """Every same-class source schedule for every task, to be applied on first use."""
    by_class: dict[str, list[SourceSchedule]] = {}
    for source in sources:
        by_class.setdefault(source.kernel_class.key, []).append(source)
    return [
        KernelResult(
            task, [Candidate(s, task.mod, target) for s in by_class.get(task.kernel_class.key, [])]
        )
        for task in tasks
    ]


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
