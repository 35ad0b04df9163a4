"""Chosen schedules as a MetaSchedule JSON database keyed by the target's workloads."""

from __future__ import annotations

from pathlib import Path

import tvm
from tvm.s_tir import meta_schedule as ms

from ..tasks.extract import Task
from .candidate import Candidate


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
