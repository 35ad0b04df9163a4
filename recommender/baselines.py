"""MetaSchedule as a baseline, rebuilt from a timestamped tuning log.

``timestamps.jsonl`` tells when each record was measured, so the database MetaSchedule had
after any amount of tuning time can be rebuilt: all records stamped up to that time. Compiling
and timing those databases gives MetaSchedule's best-so-far curve, its latency at equal wall
time, and its time to match another method.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import tvm
from tvm.s_tir import meta_schedule as ms

from .tuning_log import FAILED_RUN_S, TuningLog


@dataclass(frozen=True)
class TimedRecord:
    """One record of a log with its stamp: when it was measured and on which workload."""

    elapsed_s: float
    workload: int
    run_s: float
    record: ms.database.TuningRecord


def timed_records(log: TuningLog) -> tuple[list[TimedRecord], list[ms.database.Workload]]:
    """Every valid record in file order, paired with its stamp (read through TVM's parsers)."""
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


def database_at(timed: list[TimedRecord], until_s: float) -> ms.database.MemoryDatabase:
    """What MetaSchedule's database held after ``until_s`` seconds of tuning (best per workload)."""
    best: dict[int, TimedRecord] = {}
    for item in timed:
        if item.elapsed_s <= until_s and (
            item.workload not in best or item.run_s < best[item.workload].run_s
        ):
            best[item.workload] = item
    database = ms.database.MemoryDatabase()
    for item in best.values():
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


def time_to_match(
    timed: list[TimedRecord],
    latency_at: Callable[[float], float],
    goal_s: float,
) -> float | None:
    """The first stamp at which MetaSchedule's build is at least as fast as ``goal_s``.

    Bisection over the batch stamps (best-so-far latency is close to monotone), so about
    log2(batches) builds are compiled and timed. None if the full log never matches.
    """
    stops = sorted({t.elapsed_s for t in timed})
    if not stops or latency_at(stops[-1]) > goal_s:
        return None
    low, high = 0, len(stops) - 1
    while low < high:
        mid = (low + high) // 2
        if latency_at(stops[mid]) <= goal_s:
            high = mid
        else:
            low = mid + 1
    return stops[low]


def full_database(log: TuningLog, target: tvm.target.Target) -> ms.database.Database:
    """The whole log: MetaSchedule's result at the end of its budget."""
    return TuningLog.open(log.path, target=target).database()
