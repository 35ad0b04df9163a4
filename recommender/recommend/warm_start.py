"""Beyond transfer: MetaSchedule tuning that starts from the recommended schedules.

The recommendation's records are committed to a fresh tuning log first; MetaSchedule's
evolutionary search draws part of its initial population from the best measured records of
each workload, so it starts from the transferred schedules instead of random ones. The log is
an ordinary resumable collection (``collect``), stamped from the recommendation's search time,
so its best-so-far curve is comparable with MetaSchedule's own from-scratch log.
"""

from __future__ import annotations

from pathlib import Path

import tvm

from ..core.errors import InputError
from ..core.targets import RemoteDevice
from ..logs.collect import CollectSummary, collect
from ..logs.history import kernel_curve, timed_records
from ..logs.tuning_log import Stamp, TuningLog
from ..networks.network import Network
from ..tasks.extract import Task, extract_tasks, structural_key
from ..transfer.database import commit_picks
from .search import Recommendation


def seed_log(log: TuningLog, result: Recommendation) -> int:
    """Commit the recommendation's picks to an empty log, stamped at its search time."""
    picks = result.picks
    commit_picks(log.database(), picks, result.target)
    log.append_stamps([Stamp(result.search_s, task.name, seconds) for task, _, seconds in picks])
    return len(picks)


def then_tune(
    network: Network,
    result: Recommendation,
    work_dir: Path,
    trials: int,
    *,
    remote: RemoteDevice | None = None,
    population: int = 512,
    trials_per_iter: int = 32,
    progress: bool = True,
) -> CollectSummary:
    """``trials`` more MetaSchedule trials on ``network``, seeded with ``result``'s schedules.

    Resumable: a rerun with the same ``work_dir`` continues; the seeds are committed once.
    """
    log = TuningLog.create_or_resume(
        work_dir, target=result.target, network=network.name, budget={}
    )
    provenance = log.provenance()
    if log.record_count() == 0:
        provenance["seeds"] = seed_log(log, result)
        log.write_provenance(provenance)
    seeds = provenance.get("seeds", 0)
    return collect(
        network,
        result.target,
        work_dir,
        budget_trials=seeds + trials,
        remote=remote,
        population=population,
        trials_per_iter=trials_per_iter,
        progress=progress,
    )


def workload_weights(log: TuningLog, tasks: list[Task]) -> dict[int, int]:
    """Workload index in ``log`` -> how often the network runs that kernel."""
    by_key = {t.structural_key: t.weight for t in tasks}
    _, workloads = timed_records(log)
    return {i: by_key.get(structural_key(w.mod), 1) for i, w in enumerate(workloads)}


def estimated_curve(log: TuningLog, tasks: list[Task]) -> list[tuple[float, float]]:
    """(tuning seconds, sum of weight x best kernel seconds) once every task has a record."""
    timed, _ = timed_records(log)
    weights = workload_weights(log, tasks)
    covered: set[int] = set()
    curve = []
    for elapsed, total in kernel_curve(timed, weights):
        covered |= {t.workload for t in timed if t.elapsed_s <= elapsed}
        if len(covered) >= len(tasks):
            curve.append((elapsed, total))
    return curve


def plot_curves(curves: dict[str, list[tuple[float, float]]], path: Path, title: str) -> None:
    """Estimated network time against tuning time, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, curve in curves.items():
        if curve:
            xs, ys = zip(*curve)
            ax.step([x / 60 for x in xs], [y * 1e3 for y in ys], where="post", label=label)
    ax.set_xlabel("tuning time (min)")
    ax.set_ylabel("sum of weight x best kernel time (ms)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def compare_curves(
    network: Network, target: tvm.target.Target, warm_dir: Path, scratch_dir: Path | None
) -> tuple[dict[str, list[tuple[float, float]]], str | None]:
    """The warm-started curve and, when the network has its own log tuned for ``target``,
    MetaSchedule's from scratch; else why that curve is missing (a comparison only: a user's
    own network never has one, and the tuning stands without it)."""
    tasks = extract_tasks(network, target)
    curves = {"recommend + MetaSchedule": estimated_curve(TuningLog.open(warm_dir), tasks)}
    if scratch_dir is None or not (scratch_dir / "provenance.json").exists():
        return curves, f"no MetaSchedule log of {network.name} in the corpus to compare with"
    try:
        scratch = TuningLog.open(scratch_dir, target=target)
    except InputError as err:
        return curves, f"MetaSchedule's log of {network.name} is not comparable here ({err})"
    curves["MetaSchedule from scratch"] = estimated_curve(scratch, tasks)
    return curves, None
