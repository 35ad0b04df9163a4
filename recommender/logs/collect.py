"""Collect tuning logs: MetaSchedule's evolutionary search with its XGB cost model, resumable.

Every measured candidate is committed by MetaSchedule's ``AddToDatabase`` as it arrives (one
JSON line each), and our callback stamps it with the tuning time elapsed; a resumed run counts
the records already in the log against the budget and goes on from there.
"""

from __future__ import annotations

import datetime
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import tvm
from tqdm import tqdm
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

from ..backend.fixes import tune_context
from ..backend.measure import make_builder, make_runner
from ..core.configuration import Configuration
from ..core.interrupts import ctrl_c_stops_gently, stop_requested
from ..core.targets import RemoteDevice
from ..networks.network import Network
from ..tasks.extract import Task, extract_tasks
from . import search_space
from .scheduler import CommitEachBatch
from .tuning_log import FAILED_RUN_S, Stamp, TuningLog


@dataclass
class CollectSummary:
    """What one ``collect`` call did; ``best_s`` maps task name to its best time in seconds."""

    network: str
    work_dir: str
    tasks: int
    budget_trials: int
    trials_before: int
    trials_this_run: int = 0
    failures_this_run: int = 0
    wall_s: float = 0.0
    status: str = "finished"
    best_s: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        return dict(self.__dict__)


@derived_object
class _StampAndReport(ms.measure_callback.PyMeasureCallback):
    """Stamps each committed record, advances the progress bar and enforces the deadline."""

    def __init__(
        self,
        log: TuningLog,
        summary: CollectSummary,
        offset_s: float,
        deadline: float | None,
        bar: tqdm,
    ):
        self.log, self.summary, self.bar = log, summary, bar
        self.offset_s, self.deadline = offset_s, deadline
        self.start = time.monotonic()

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
        now = self.offset_s + time.monotonic() - self.start
        task = task_scheduler.tasks_[task_id].ctx.task_name
        stamps = []
        for build, run in zip(builder_results, runner_results):
            ok = build.error_msg is None and run.error_msg is None and run.run_secs
            run_s = statistics.median(float(s) for s in run.run_secs) if ok else None
            stamps.append(Stamp(now, task, run_s))
            self.summary.failures_this_run += not ok
        self.log.append_stamps(stamps)
        self.summary.trials_this_run += len(stamps)
        self.bar.update(len(stamps))
        spent = self.summary.trials_before + self.summary.trials_this_run
        if spent >= self.summary.budget_trials:
            return  # TVM terminates the tasks itself; terminating them too fails its check
        if stop_requested():
            self.summary.status = "interrupted"
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.summary.status = "time budget spent"
        else:
            return
        for i, record in enumerate(task_scheduler.tasks_):
            if not record.is_terminated:
                task_scheduler.terminate_task(i)


def _tune_contexts(
    tasks: list[Task], target: tvm.target.Target, seed: int, population: int, space: str
) -> list:
    return [
        tune_context(
            mod=task.mod,
            target=target,
            space_generator=search_space.space_generator(space, target),
            search_strategy=ms.search_strategy.EvolutionarySearch(population_size=population),
            task_name=task.name,
            rand_state=seed + i,
            num_threads=int(target.attrs["num-cores"]),
        ).clone()
        for i, task in enumerate(tasks)
    ]


def best_times(log: TuningLog) -> dict[str, float]:
    """Best measured seconds per task name, from the stamps (failures excluded)."""
    best: dict[str, float] = {}
    for stamp in log.stamps():
        if stamp.run_s is not None and stamp.run_s < FAILED_RUN_S:
            best[stamp.task] = min(best.get(stamp.task, math.inf), stamp.run_s)
    return best


def complete_log(
    path: Path, target: tvm.target.Target, configuration: Configuration
) -> TuningLog | None:
    """The log at ``path`` if it was tuned for ``target`` in ``configuration`` and its budget is
    spent (or its search ended), else None: a reference, not a log still being tuned."""
    if not (path / "provenance.json").is_file():
        return None
    log = TuningLog.open(path, target=target, configuration=configuration)
    return log if log.trials_left(log.provenance()["budget"]["trials_total"]) == 0 else None


def collect(
    network: Network,
    target: tvm.target.Target,
    work_dir: str | Path,
    *,
    configuration: Configuration | None = None,
    **options,
) -> CollectSummary:
    """Tune every task of ``network``, prepared by ``configuration`` (default: the corpus's),
    into ``work_dir`` (see ``collect_tasks`` for ``options``)."""
    tasks = extract_tasks(network, target, configuration=configuration)
    return collect_tasks(
        network.name, tasks, target, work_dir, configuration=configuration, **options
    )


def collect_tasks(
    name: str,
    tasks: list[Task],
    target: tvm.target.Target,
    work_dir: str | Path,
    *,
    trials_per_task: int = 64,
    minutes: float | None = None,
    remote: RemoteDevice | None = None,
    trials_per_iter: int = 32,
    population: int = 512,
    seed: int = 1,
    progress: bool = True,
    budget_trials: int | None = None,
    configuration: Configuration | None = None,
    space: str = search_space.DEFAULT,
) -> CollectSummary:
    """Tune ``tasks`` (of the network or set ``name``) into ``work_dir`` until
    ``trials_per_task`` x tasks records exist.

    Parameters
    ----------
    trials_per_task : int
        Budget as an average per task; MetaSchedule's gradient task scheduler spreads the total.
    minutes : float, optional
        Wall-clock budget of this call; the run stops after the batch that crosses it.
    remote : RemoteDevice, optional
        Time on a device behind an RPC tracker instead of this machine.
    trials_per_iter, population : int
        Candidates measured per batch, and the evolutionary search's population (MetaSchedule's
        default 512 costs about 25 s of search per batch; tiny tests use less).
    budget_trials : int, optional
        The total number of records to reach instead of ``trials_per_task`` x tasks (a log
        seeded with transferred records counts them).
    configuration : Configuration, optional
        How ``tasks``' network was prepared, for the log's provenance (default: the corpus's).
    space : str
        The search space (``search_space.names()``): MetaSchedule's default or a variant of its
        CPU settings; named in the log's provenance.

    Returns
    -------
    CollectSummary
        Trials before and during this call, failures, best time per task, status.
    """
    if budget_trials is not None:
        trials_per_task = math.ceil(budget_trials / len(tasks))
    total = budget_trials if budget_trials is not None else trials_per_task * len(tasks)
    budget = {"trials_per_task": trials_per_task, "trials_total": total}
    log = TuningLog.create_or_resume(
        work_dir,
        target=target,
        network=name,
        budget=budget,
        configuration=configuration,
        space=search_space.check(space),
    )
    done = log.record_count()
    summary = CollectSummary(
        network=name,
        work_dir=str(log.path),
        tasks=len(tasks),
        budget_trials=budget["trials_total"],
        trials_before=done,
    )
    remaining = log.trials_left(total, done)
    if remaining <= 0:
        summary.status = "budget already spent" if done >= total else "search already finished"
        summary.best_s = best_times(log)
        return summary
    stamps = log.stamps()
    offset_s = stamps[-1].elapsed_s if stamps else 0.0
    start = time.monotonic()
    deadline = None if minutes is None else start + minutes * 60
    provenance = log.provenance()
    session = {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "status": "running",  # stays so if the process is killed
        "budget_trials": total,
        "tvm_threads": os.environ.get("TVM_NUM_THREADS", "TVM's default"),
    }
    provenance["sessions"].append(session)
    log.write_provenance(provenance)
    bar = tqdm(total=remaining, desc=name, unit="trial", disable=not progress)
    callback = _StampAndReport(log, summary, offset_s, deadline, bar)
    try:
        with ctrl_c_stops_gently():
            ms.tune_tasks(
                tasks=_tune_contexts(tasks, target, seed + done, population, space),
                task_weights=[float(t.weight) for t in tasks],
                work_dir=str(log.path),
                max_trials_global=remaining,
                max_trials_per_task=max(trials_per_task * 2, trials_per_iter),
                num_trials_per_iter=min(trials_per_iter, remaining),
                builder=make_builder(remote=remote),
                runner=make_runner(remote),
                database=log.database(),
                cost_model=ms.cost_model.XGBModel(num_tuning_cores=target.attrs["num-cores"]),
                measure_callbacks=[*ms.MeasureCallback.create("default"), callback],
                task_scheduler=CommitEachBatch(),
            )
    except KeyboardInterrupt:
        summary.status = "interrupted"
    finally:
        bar.close()
        summary.wall_s = time.monotonic() - start
        session.update(
            wall_s=round(summary.wall_s, 1),
            trials=summary.trials_this_run,
            failures=summary.failures_this_run,
            status=summary.status,
        )
        log.write_provenance(provenance)
        log.pack()
    summary.best_s = best_times(log)
    return summary
