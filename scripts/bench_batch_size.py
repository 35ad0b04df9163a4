"""MetaSchedule's clock at 32 and at 64 trials per batch: how much the corpus's stamps overstate.

    python scripts/bench_batch_size.py [NETWORK] [--trials-per-iter 64]

The corpus's logs are tuned 32 trials per batch, so that every batch is on disk before the next
search starts (``logs.scheduler``); MetaSchedule's ``tune_tasks`` defaults to 64, and each batch
pays one evolutionary search whatever its size. So a 32-per-batch log's stamps may overstate
the tuning time MetaSchedule's defaults take, and with them every "time to match" of the
evaluation. This tunes NETWORK (default ResNet-18) again at the larger batch, as many trials
per task as its corpus log has, into the corpus's ``datasets/logs_batch<N>/`` (resumable), and
compares the two logs' clocks: wall seconds per trial, and the estimated network time (weight x
best kernel time summed over tasks) against tuning time, with the time each log takes to come
within 5% and 1% of the corpus log's final estimate. Both networks are then built from their
logs, checked against the untuned build and timed in one interleaved run (two tunings of one
network differ that much by chance too). Writes ``docs/results/batch_size_<cpu>.json`` and a
plot beside it. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import sys

from recommender.core import corpora, paths
from recommender.core.corpora import CHECKOUT
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate import endtoend
from recommender.evaluate.searches import write_json
from recommender.logs.collect import collect, complete_log
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import load_zoo_network
from recommender.recommend.warm_start import estimated_curve, plot_curves
from recommender.tasks.extract import extract_tasks, prepare

WITHIN = (0.05, 0.01)


def clock(log: TuningLog, curve: list[tuple[float, float]], reference: float) -> dict:
    """Wall time, trials and the tuning seconds to come within each ``WITHIN`` of
    ``reference`` (None: never)."""
    sessions = log.provenance().get("sessions", [])
    wall = sum(s.get("wall_s", 0.0) for s in sessions)
    trials = sum(s.get("trials", 0) for s in sessions)
    reach = {
        f"{w:.0%}": next((round(t, 1) for t, total in curve if total <= reference * (1 + w)), None)
        for w in WITHIN
    }
    return {
        "trials": trials,
        "wall_s": round(wall, 1),
        "s_per_trial": round(wall / trials, 3) if trials else None,
        "last_stamp_s": round(curve[-1][0], 1) if curve else None,
        "estimated_ms": round(curve[-1][1] * 1e3, 3) if curve else None,
        "within_s": reach,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("network", nargs="?", default="resnet18")
    parser.add_argument("--trials-per-iter", type=int, default=64)
    args = parser.parse_args()
    target = host_target()
    use_target_threads(target)
    choice = corpora.choose(target, writing=True)
    paths.use_corpus(choice.corpus.root)
    config = choice.corpus.configuration
    base = complete_log(paths.logs() / args.network, target, config)
    if base is None:
        parser.error(f"no complete log of {args.network} in {choice.corpus.root}")
    network = load_zoo_network(args.network)
    tasks = extract_tasks(network, target)
    batch = args.trials_per_iter
    work_dir = paths.root() / "datasets" / f"logs_batch{batch}" / args.network
    trials_per_task = base.provenance()["budget"]["trials_per_task"]
    summary = collect(
        network, target, work_dir, trials_per_task=trials_per_task, trials_per_iter=batch
    )
    if summary.status != "finished":
        print(f"{args.network}: {summary.status}; rerun to continue", file=sys.stderr)
        return 130
    logs = {"32 per batch (corpus)": base, f"{batch} per batch": TuningLog(work_dir)}
    curves = {label: estimated_curve(log, tasks) for label, log in logs.items()}
    reference = curves["32 per batch (corpus)"][-1][1]
    builds = endtoend.Builds(prepare(network.mod, target, config), target)
    builds.want("untuned")
    for label, log in logs.items():
        builds.want(label, log.path)
    checked = endtoend.ReferenceOutputs(builds.get("untuned"), network)
    executables, wrong = checked.partition({label: builds.get(label) for label in logs})
    times = endtoend.time_interleaved(executables, network)
    cpu = str(target.attrs["mcpu"])
    out = CHECKOUT / "docs" / "results" / f"batch_size_{cpu}.json"
    result = {
        "network": args.network,
        "corpus": choice.corpus.name,
        "configuration": str(config),
        "logs": {
            label: {**clock(log, curves[label], reference), "measured_ms": None}
            for label, log in logs.items()
        },
        "wrong": wrong,
        "command": " ".join(["python", *sys.argv]),
    }
    for label, seconds in times.items():
        result["logs"][label]["measured_ms"] = round(seconds * 1e3, 3)
    write_json(out, result)
    plot = out.with_suffix(".png")
    plot_curves(curves, plot, f"{args.network} on {cpu}: MetaSchedule by batch size")
    for label, row in result["logs"].items():
        print(
            f"{label}: {row['s_per_trial']} s/trial, last stamp {row['last_stamp_s']} s, "
            f"within 5%/1% of the corpus log at {row['within_s']} s, "
            f"built {row['measured_ms']} ms"
        )
    print(f"written: {out}, {plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
