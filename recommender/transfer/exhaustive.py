"""Exhaustive transfer-tuning (Gibson & Cano, 2022): time every same-class source schedule.

For every target kernel, every source schedule of its kernel class is applied, checked against
the unscheduled kernel and timed standalone; the fastest valid one wins if it beats the untuned
kernel, otherwise the kernel stays untuned. A kernel no source reaches gets the samples of
MetaSchedule's design space instead (the default level; not with the paper's exact level
alone). The result is a MetaSchedule database keyed by the target's workloads, which
``compile_relax`` applies as it is.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import tvm
from tqdm import tqdm
from tvm.s_tir import meta_schedule as ms

from ..core.targets import RemoteDevice
from ..logs.sources import SourceSchedule
from ..networks.network import Network
from ..tasks.extract import extract_tasks, prepare
from .apply import Level
from .candidate import LEVELS, KernelResult, apply_all, apply_candidates, default_candidates
from .database import write_records
from .journal import Journal
from .timing import measure_kernels

logger = logging.getLogger(__name__)


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


def extract(
    network: Network,
    target: tvm.target.Target,
    sources: list[SourceSchedule],
    *,
    levels: tuple[Level, ...] = LEVELS,
) -> tuple[tvm.IRModule, list[KernelResult]]:
    """The prepared network and its kernels, each with its pool of candidates (unapplied)."""
    prepared = prepare(network.mod, target)
    tasks = extract_tasks(network, target)
    return prepared, apply_candidates(tasks, sources, target, levels=levels)


def transfer_tune(
    network: Network,
    target: tvm.target.Target,
    sources: list[SourceSchedule],
    *,
    remote: RemoteDevice | None = None,
    progress: bool = True,
    journal: Journal | None = None,
    database_dir: Path | None = None,
    levels: tuple[Level, ...] = LEVELS,
) -> TransferRun:
    """Run the paper's algorithm on ``network`` with the given source schedules; with a
    ``journal``, measurements are kept as they are made and a rerun times only the rest. With
    ``database_dir``, the chosen schedules are written there as a MetaSchedule database.
    ``levels=(Level.EXACT,)`` is the paper's algorithm as published (same kernel class only)."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    prepared, kernels = extract(network, target, sources, levels=levels)
    timings["extract"] = time.perf_counter() - start
    start = time.perf_counter()
    apply_all(kernels)
    if Level.DEFAULT in levels:
        for kernel in kernels:
            if not any(c.applies for c in kernel.candidates):
                kernel.candidates += default_candidates(kernel.task, target)
    timings["apply"] = time.perf_counter() - start

    total = sum(
        1 + sum(c.applies for c in k.candidates)
        for k in kernels
        if any(c.applies for c in k.candidates)
    )
    earlier_s = journal.restore(kernels) if journal else 0.0
    start = time.perf_counter()
    with tqdm(
        total=total, desc=f"{network.name}: time", unit="timing", disable=not progress
    ) as bar:
        measure_kernels(
            kernels,
            target,
            remote=remote,
            on_progress=bar.update,
            on_chunk=journal.append if journal else None,
        )
    timings["measure"] = earlier_s + time.perf_counter() - start
    run = TransferRun(network.name, target, prepared, kernels, timings)
    if database_dir is not None:
        write_database(run, database_dir)
    return run


def write_database(run: TransferRun, out_dir: Path) -> ms.database.JSONDatabase:
    """The chosen schedules as a MetaSchedule JSON database keyed by the target's workloads."""
    picks = [(k.task, k.best, k.best.run_s) for k in run.kernels if k.best is not None]
    return write_records(picks, run.target, out_dir)
