"""MetaSchedule's tuning history rebuilt from a log's timestamps: its best-so-far at any time."""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from dataclasses import dataclass

from tvm.s_tir import meta_schedule as ms

from ..backend import fp32_intrinsics
from ..logs.tuning_log import FAILED_RUN_S, TuningLog


@dataclass(frozen=True)
class TimedRecord:
    """One record of a log with its stamp: when it was measured and on which workload."""

    elapsed_s: float
    workload: int
    run_s: float
    record: ms.database.TuningRecord


def timed_records(log: TuningLog) -> tuple[list[TimedRecord], list[ms.database.Workload]]:
    """Every valid record in file order, paired with its stamp (read through TVM's parsers)."""
    fp32_intrinsics.register()  # a record tuned in a micro-kernel space names them
    workloads = [
        ms.database.Workload.from_json(json.loads(line))
        for line in log.workloads_path.read_text().splitlines()
        if line.strip()
    ]
    stamps = log.stamps()
    lines = [line for line in log.records_path.read_text().splitlines() if line.strip()]
    timed = []
    for stamp, line in zip(stamps, lines):
        index, record_json = json.loads(line)
        record = ms.database.TuningRecord.from_json(record_json, workloads[index])
        secs = sorted(float(s) for s in record.run_secs)
        run_s = secs[len(secs) // 2] if secs else math.inf
        if run_s < FAILED_RUN_S:
            timed.append(TimedRecord(stamp.elapsed_s, index, run_s, record))
    return timed, workloads


def best_at(timed: list[TimedRecord], until_s: float) -> dict[int, TimedRecord]:
    """The best record per workload among those stamped up to ``until_s``."""
    best: dict[int, TimedRecord] = {}
    for item in timed:
        if item.elapsed_s <= until_s and (
            item.workload not in best or item.run_s < best[item.workload].run_s
        ):
            best[item.workload] = item
    return best


def database_at(timed: list[TimedRecord], until_s: float) -> ms.database.MemoryDatabase:
    """What MetaSchedule's database held after ``until_s`` seconds of tuning (best per workload)."""
    database = ms.database.MemoryDatabase()
    for item in best_at(timed, until_s).values():
        database.commit_workload(item.record.workload.mod)
        database.commit_tuning_record(item.record)
    return database


def kernel_curve(timed: list[TimedRecord], weights: dict[int, int]) -> list[tuple[float, float]]:
    """Sum over workloads of weight x best kernel time, after each batch: never increases once
    every workload has a record (the best-so-far curve at kernel level, no compile needed)."""
    best: dict[int, float] = {}
    curve = []
    for elapsed in sorted({t.elapsed_s for t in timed}):
        for t in timed:
            if t.elapsed_s == elapsed:
                best[t.workload] = min(best.get(t.workload, math.inf), t.run_s)
        curve.append((elapsed, sum(weights.get(w, 1) * s for w, s in best.items())))
    return curve


def bisect_stops(stops: list[float]) -> Generator[float, bool, float | None]:
    """The first of ``stops`` at which MetaSchedule's build is at least as fast as a method's.

    A generator: it yields each stop to probe and is sent whether MetaSchedule matched there,
    so the caller can probe several methods' stops together. Bisection (best-so-far latency
    is close to monotone): about log2(stops) probes. Returns None if the last stop does not
    match.
    """
    if not stops or not (yield stops[-1]):
        return None
    low, high = 0, len(stops) - 1
    while low < high:
        mid = (low + high) // 2
        if (yield stops[mid]):
            high = mid
        else:
            low = mid + 1
    return stops[low]
