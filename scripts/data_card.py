"""Write the data cards of a corpus's tuning logs and transfer-benefit dataset:
CORPUS/datasets/logs/README.md and CORPUS/datasets/transfer/README.md.

    python scripts/data_card.py [--time] [--corpus NAME]

Logs, per network: tasks, budget, records, failures, tuning time, dates; with ``--time`` also
the untuned and MetaSchedule-tuned end-to-end latency, measured interleaved on this machine (the
logs' CPU) and cached in ``<log>/endtoend.json`` (remeasured when the log has grown). Run it
alone on the machine. Dataset, per target network: kernels, candidates, failures, gains.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter

import numpy as np
import tvm

from recommender.core import corpora, paths
from recommender.core.errors import InputError
from recommender.core.targets import host_target
from recommender.evaluate import endtoend
from recommender.learn.dataset import dataset_provenance, load_dataset, training_targets
from recommender.learn.features import FEATURE_NAMES
from recommender.learn.kernel_data import STATUSES
from recommender.learn.training import applied_rows
from recommender.logs.tuning_log import FAILED_RUN_S, TuningLog
from recommender.networks.zoo import load_zoo_network, zoo_names
from recommender.tasks.extract import prepare


def cached_end_to_end(log: TuningLog) -> dict | None:
    """The latencies measured for the log as it is now, if they were."""
    cache = log.path / "endtoend.json"
    if cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("records") == log.record_count():
            return cached
    return None


def end_to_end(log: TuningLog, name: str, target: tvm.target.Target) -> dict:
    cached = cached_end_to_end(log)
    if cached:
        return cached
    records = log.record_count()
    cache = log.path / "endtoend.json"
    network = load_zoo_network(name)
    prepared = prepare(network.mod, target)
    both = endtoend.Builds(prepared, target)  # compiled side by side
    both.want("untuned")
    both.want("metaschedule", log.path)
    builds = {"untuned": both.get("untuned"), "metaschedule": both.get("metaschedule")}
    problem = endtoend.outputs_match(builds["untuned"], builds["metaschedule"], network)
    if problem:
        raise SystemExit(f"{name}: the tuned build is wrong: {problem}")
    times = endtoend.time_interleaved(builds, network)
    result = {"records": records, **{f"{k}_ms": round(v * 1e3, 4) for k, v in times.items()}}
    cache.write_text(json.dumps(result, indent=1) + "\n")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time", action="store_true", help="measure end-to-end latencies")
    parser.add_argument("--corpus", default=None, help="corpus name or path (default: chosen)")
    args = parser.parse_args()
    target = host_target()
    paths.use_corpus(corpora.choose(target, args.corpus).corpus.root)
    rows = []
    first = None
    for name in zoo_names():
        if not (paths.logs() / name / "provenance.json").exists():
            rows.append(f"| {name} | not collected yet | | | | | | |")
            continue
        log = TuningLog.open(paths.logs() / name, target=target if args.time else None)
        provenance = log.provenance()
        first = first or provenance
        stamps = log.stamps()
        failures = sum(s.run_s is None or s.run_s >= FAILED_RUN_S for s in stamps)
        sessions = provenance["sessions"]
        dates = sorted({s["started"][:10] for s in sessions})
        tuning_s = stamps[-1].elapsed_s if stamps else 0.0
        times = end_to_end(log, name, target) if args.time else cached_end_to_end(log) or {}
        untuned, tuned = times.get("untuned_ms"), times.get("metaschedule_ms")
        latency = f"{untuned:.2f} / {tuned:.2f}" if untuned and tuned else "not measured"
        per_task = provenance["budget"].get("trials_per_task", 0)
        total = provenance["budget"].get("trials_total", 0)
        tasks = total // max(per_task, 1)
        records = f"{len(stamps)}"
        if len(stamps) < total:
            records += f" (of {total}: {'search ended' if log.search_ended(total) else 'resumes'})"
        rows.append(
            f"| {name} | {per_task} x {tasks} | {records} | {failures} | "
            f"{tuning_s / 60:.1f} | {latency} | {', '.join(dates)} | {len(sessions)} |"
        )
    machine = first["machine"] if first else {}
    card = [
        "# Data card: MetaSchedule tuning logs of the model zoo",
        "",
        "Made with `recommender collect NETWORK --trials-per-task 64` (evolutionary search, XGB",
        "cost model, MetaSchedule defaults; one batch of 32 committed before the next, see",
        "`recommender/scheduler.py`). Each directory is a standard MetaSchedule JSON work dir plus",
        "`provenance.json` and `timestamps.jsonl` (tuning seconds when each record was measured).",
        "The three line files are stored gzipped (`NAME.gz`, about 25x smaller); opening a",
        "log (`TuningLog.open`, every command) recreates the plain files TVM reads. A network",
        "below its budget is resumed by the same `collect` command, unless MetaSchedule ended",
        "the search itself ('search ended': tasks with a one-schedule design space are measured",
        "once, the others stop at 2 x 64 trials; docs/tvm.md, Task schedulers).",
        "",
        f"- machine: {machine.get('cpu', '?')} ({machine.get('arch', '?')}), "
        f"target `{json.dumps(first['target']) if first else '?'}`",
        f"- TVM {first['tvm'] if first else '?'}; batch 1; random weights (seeded)",
        f"- configuration (`corpus.json`, how every network is prepared): {paths.configuration()}",
        "- untuned = the plain Relax build (naive loops), far weaker than TVM's old TOPI defaults",
        "",
        "| network | budget (trials/task x tasks) | records | failures | tuning min "
        "| untuned / tuned ms | dates | sessions |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
    (paths.logs() / "README.md").write_text("\n".join(card))
    print("\n".join(card))
    if (paths.transfer() / "provenance.json").exists():
        try:
            print(dataset_card(paths.transfer()))
        except InputError as error:  # a build begun, nothing measured yet: no card to write
            print(f"no dataset card: {error}")
    return 0


def dataset_card(directory) -> str:
    """Write ``directory``'s data card; returns it."""
    provenance = dataset_provenance(directory)
    kernels = load_dataset(directory)
    source_rank = FEATURE_NAMES.index("s_rank")  # 0 = the best record of its workload
    rows = []
    trained_only = training_targets(directory)
    for name in [*zoo_names(), *sorted(trained_only)]:
        mine = [k for k in kernels if k.network == name]
        label = f"{name} (training target)" if name in trained_only else name
        if not mine:
            rows.append(f"| {label} | no kernels yet | | | | | |")
            continue
        candidates = sum(len(k.run_s) for k in mine)
        failed = Counter(STATUSES[s] for k in mine for s in k.status if STATUSES[s] != "ok")
        gains = [k.untuned_s / k.best_s for k in mine if np.isfinite(k.untuned_s)]
        improved = sum(g > 1 for g in gains)
        deeper = any((k.features[applied_rows(k), source_rank] > 0).any() for k in mine)
        rows.append(
            f"| {label} | {'top ' + str(provenance['top_n']) if deeper else 'best only'} | "
            f"{len(mine)} | {candidates} | {candidates / len(mine):.0f} | "
            f"{', '.join(f'{n} {s}' for s, n in sorted(failed.items())) or '0'} | "
            f"{improved}/{len(gains)} (median {statistics.median(gains):.1f}x) |"
        )
    total = sum(len(k.run_s) for k in kernels)
    card = [
        "# Data card: the transfer-benefit dataset",
        "",
        "Every (source record, target kernel) pair of the same kernel class across the zoo,",
        "leave-one-model-out (a network's kernels only get records of the other networks'",
        "logs), each candidate applied, featurised (schema `recommender/features.py`), checked",
        "against the unscheduled kernel and timed beside the untuned kernel. Made by `recommender",
        "dataset build --top-n N` (the N best records per source workload) and by the",
        "evaluation's exhaustive runs over every other network, which add the pairs of each",
        "source workload's best record (`recommender evaluate`); the column 'source records'",
        "says which a network holds. A training target has no log: its kernels get every",
        "network's records, it is trained on and never held out. The cost model in",
        "`models/default/` is trained on all of it (`recommender train`).",
        "",
        f"- machine: {provenance['machine']['cpu']} ({provenance['machine']['arch']}), "
        f"target `{json.dumps(provenance['target'])}`",
        f"- TVM {provenance['tvm']}; feature schema {provenance['schema']} "
        f"({provenance['features']} features); `--top-n` {provenance['top_n']}; "
        f"started {provenance['started']}",
        f"- {len(kernels)} kernels, {total} candidates",
        "",
        "| target network | source records | kernels | candidates | per kernel | failed (stage) "
        "| kernels improved (best candidate vs untuned) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
    (directory / "README.md").write_text("\n".join(card))
    return "\n".join(card)


if __name__ == "__main__":
    sys.exit(main())
