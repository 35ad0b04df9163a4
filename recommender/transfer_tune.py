"""Exhaustive transfer-tuning (Gibson & Cano, 2022): time every same-class source schedule.

For every target kernel, every source schedule of its kernel class is applied, checked against
the unscheduled kernel and timed standalone; the fastest valid one wins if it beats the untuned
kernel, otherwise the kernel stays untuned. The result is a MetaSchedule database keyed by the
target's workloads, which ``compile_relax`` applies as it is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import tvm
from tqdm import tqdm
from tvm.s_tir import meta_schedule as ms

from .apply import Applied, apply_trace
from .interrupts import checkpoint
from .measure import Measurement, measure
from .network import Network
from .sources import SourceSchedule
from .targets import RemoteDevice
from .tasks import Task, extract_tasks, prepare

if TYPE_CHECKING:
    from .journal import Journal

logger = logging.getLogger(__name__)

CHUNK = 32  # candidates per build/verify/run batch: worker start-up is paid once per chunk


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
    def failure(self) -> str | None:
        if not self.applies:
            return f"apply: {self.apply_reason}"
        if self.measurement and not self.measurement.ok:
            return f"{self.measurement.stage}: {self.measurement.error}"
        return None


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


@dataclass
class TransferRun:
    network: str
    target: tvm.target.Target
    prepared: tvm.IRModule  # what endtoend.build compiles
    kernels: list[KernelResult]
    timings_s: dict[str, float] = field(default_factory=dict)

    @property
    def search_s(self) -> float:
        """Apply + build + check + time, as the paper counts search time."""
        return sum(self.timings_s.get(k, 0.0) for k in ("apply", "measure"))


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


def measure_kernels(
    kernels: list[KernelResult],
    target: tvm.target.Target,
    *,
    remote: RemoteDevice | None = None,
    on_progress: Callable[[int], None] = lambda n: None,
    on_chunk: Callable[[list[Job], float], None] | None = None,
) -> None:
    """Time each kernel's untuned workload and all its applied candidates (those not
    measured yet)."""
    jobs: list[Job] = []
    for kernel in kernels:
        checkpoint()  # applying every candidate first takes a minute on large networks
        if not any(c.applies for c in kernel.candidates):
            continue  # nothing to compare with: the untuned time is not needed
        jobs.append((kernel, None))
        jobs.extend((kernel, c) for c in kernel.candidates if c.applies)
    measure_jobs(jobs, target, remote=remote, on_progress=on_progress, on_chunk=on_chunk)


def measure_jobs(
    jobs: list[Job],
    target: tvm.target.Target,
    *,
    remote: RemoteDevice | None = None,
    timed: bool = True,
    on_progress: Callable[[int], None] = lambda n: None,
    on_chunk: Callable[[list[Job], float], None] | None = None,
) -> None:
    """Measure untuned workloads and candidates in chunks of ``CHUNK``, storing the results on
    them (what is measured already is skipped); with ``timed=False`` candidates are only checked
    against their workload. ``on_chunk`` gets each chunk once measured, with its seconds."""
    for _, candidate in jobs:
        if candidate is not None and not candidate.applied.ok:  # a cached outcome gone stale
            candidate.measurement = Measurement(None, "apply", candidate.applied.reason)
    on_progress(sum(outcome(job) is not None for job in jobs))
    jobs = [job for job in jobs if outcome(job) is None]
    for start in range(0, len(jobs), CHUNK):
        checkpoint()
        began = time.perf_counter()
        chunk = jobs[start : start + CHUNK]
        groups: dict[int, tuple[tvm.IRModule, list]] = {}
        for kernel, candidate in chunk:
            mod = kernel.task.mod if candidate is None else candidate.applied.schedule.mod
            groups.setdefault(id(kernel), (kernel.task.mod, []))[1].append(mod)
        results = measure(list(groups.values()), target, remote=remote, timed=timed)
        flat = iter([m for group in results for m in group])
        for (kernel, candidate), result in zip(_group_order(chunk), flat):
            if candidate is None:
                kernel.untuned = result
            else:
                candidate.measurement = result
        on_progress(len(chunk))
        if on_chunk is not None:
            on_chunk(chunk, time.perf_counter() - began)


def _group_order(chunk: list) -> list:
    """``chunk`` reordered group by group, the order ``measure`` returns results in."""
    order: dict[int, list] = {}
    for kernel, candidate in chunk:
        order.setdefault(id(kernel), []).append((kernel, candidate))
    return [job for jobs in order.values() for job in jobs]


def extract(
    network: Network, target: tvm.target.Target, sources: list[SourceSchedule]
) -> tuple[tvm.IRModule, list[KernelResult]]:
    """The prepared network and its kernels, each with its same-class candidates (unapplied)."""
    prepared = prepare(network.mod)
    tasks = extract_tasks(network, target)
    return prepared, apply_candidates(tasks, sources, target)


def transfer_tune(
    network: Network,
    target: tvm.target.Target,
    sources: list[SourceSchedule],
    *,
    remote: RemoteDevice | None = None,
    progress: bool = True,
    journal: Journal | None = None,
) -> TransferRun:
    """Run the paper's algorithm on ``network`` with the given source schedules; with a
    ``journal``, measurements are kept as they are made and a rerun times only the rest."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    prepared, kernels = extract(network, target, sources)
    timings["extract"] = time.perf_counter() - start
    start = time.perf_counter()
    apply_all(kernels)
    timings["apply"] = time.perf_counter() - start

    total = sum(
        1 + sum(c.applies for c in k.candidates)
        for k in kernels
        if any(c.applies for c in k.candidates)
    )
    earlier_s = journal.restore(kernels) if journal else 0.0
    start = time.perf_counter()
    with tqdm(
        total=total, desc=f"{network.name}: time", unit="kernel", disable=not progress
    ) as bar:
        measure_kernels(
            kernels,
            target,
            remote=remote,
            on_progress=bar.update,
            on_chunk=journal.append if journal else None,
        )
    timings["measure"] = earlier_s + time.perf_counter() - start
    return TransferRun(network.name, target, prepared, kernels, timings)


def write_database(run: TransferRun, out_dir: Path) -> ms.database.JSONDatabase:
    """The chosen schedules as a MetaSchedule JSON database keyed by the target's workloads."""
    picks = [(k.task, k.best, k.best.run_s) for k in run.kernels if k.best is not None]
    return write_records(picks, run.target, out_dir)


def write_records(
    picks: list[tuple[Task, Candidate, float]], target: tvm.target.Target, out_dir: Path
) -> ms.database.JSONDatabase:
    """One record per (task, chosen candidate, seconds) in a fresh JSON database at ``out_dir``.

    TVM ignores a record without ``run_secs``, so every pick carries a time (measured, or the
    recommender's prediction when nothing was timed).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("database_workload.json", "database_tuning_record.json"):
        (out_dir / name).unlink(missing_ok=True)  # a rerun replaces the previous choice
    database = ms.database.JSONDatabase(work_dir=str(out_dir), module_equality="structural")
    commit_picks(database, picks, target)
    return database


def commit_picks(
    database: ms.database.Database,
    picks: list[tuple[Task, Candidate, float]],
    target: tvm.target.Target,
) -> None:
    for task, candidate, seconds in picks:
        workload = database.commit_workload(task.mod)
        func = next(f for f in task.mod.functions.values())
        record = ms.database.TuningRecord(
            trace=candidate.applied.schedule.trace,
            workload=workload,
            run_secs=[seconds],
            target=target,
            args_info=ms.arg_info.ArgInfo.from_prim_func(func),
        )
        database.commit_tuning_record(record)
