"""Whole networks tuned in each corpus configuration of this CPU, end to end, against PyTorch
eager and ONNX Runtime: which way of preparing networks pays, network by network.

    .venv/bin/python scripts/bench_configurations.py [MODEL ...] [--corpora NAME ...]

Each corpus (default: every corpus of this CPU; ``recommender corpora`` lists them) builds the
network prepared by its own configuration (layout, fast math) with MetaSchedule's records from
its log of the network, at the budget that log has (the JSON keeps both). Every build is checked
against the untuned native build on random inputs, then all are timed in one interleaved run
with the runtimes a user would pick instead. A network is measured from the corpora with a
complete log of it (one is enough: against the runtimes). Writes
``docs/results/configurations_<cpu>.json`` after every network. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import sys

from recommender.core import corpora
from recommender.core.configuration import DEFAULT
from recommender.core.corpora import CHECKOUT, Corpus
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate import endtoend
from recommender.evaluate.comparison import baselines
from recommender.evaluate.searches import read_json, write_json
from recommender.logs.collect import best_times, complete_log
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import load_zoo_network, zoo_names
from recommender.tasks.extract import extract_tasks, prepare

UNTUNED = "untuned (native)"


def compare(name: str, logs: dict[str, tuple[Corpus, TuningLog]], target) -> dict:
    network = load_zoo_network(name)
    builds = {}
    for key, (corpus, log) in logs.items():
        builds[key] = endtoend.Builds(prepare(network.mod, target, corpus.configuration), target)
        builds[key].want(key, log.path)
    native = endtoend.Builds(prepare(network.mod, target, DEFAULT), target)
    native.want(UNTUNED)
    reference = endtoend.ReferenceOutputs(native.get(UNTUNED), network)
    executables, wrong = reference.partition({key: built.get(key) for key, built in builds.items()})
    others, missing = baselines(name, int(target.attrs["num-cores"]))
    times = endtoend.time_interleaved(executables, network, others=others)
    corpus_of = {key: corpus for key, (corpus, _) in logs.items()}
    tasks = {
        k: extract_tasks(network, target, configuration=c.configuration)
        for k, c in corpus_of.items()
    }
    return {
        "ms": {k: round(v * 1e3, 3) for k, v in times.items()},
        "configurations": {k: str(c.configuration) for k, c in corpus_of.items()},
        "tasks": {k: len(t) for k, t in tasks.items()},
        "heaviest_kernels_ms": {k: heaviest(tasks[k], log) for k, (_, log) in logs.items()},
        "records": {k: log.record_count() for k, (_, log) in logs.items()},
        "tuning_s": {k: round(log.stamps()[-1].elapsed_s, 1) for k, (_, log) in logs.items()},
        "wrong": wrong,
        "baselines_missing": missing,
    }


def heaviest(tasks: list, log: TuningLog, count: int = 8) -> dict[str, float]:
    """The kernels that take most of the network's time by the log's best records: best ms x
    occurrences, the heaviest first (what explains two corpora's difference)."""
    best = best_times(log)
    weighted = {t.name: best[t.name] * t.weight * 1e3 for t in tasks if t.name in best}
    return {n: round(ms, 3) for n, ms in sorted(weighted.items(), key=lambda kv: -kv[1])[:count]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=None, help="zoo networks (default: all)")
    parser.add_argument("--corpora", nargs="*", default=None, help="default: this CPU's")
    args = parser.parse_args()
    target = host_target()
    threads = use_target_threads(target)
    cpu = str(target.attrs["mcpu"])
    found = {c.name: c for c in corpora.find_corpora()}
    names = args.corpora or [n for n, c in found.items() if c.cpu == cpu]
    unknown = sorted(set(names) - set(found))
    if unknown:
        parser.error(f"--corpora: no corpus {', '.join(unknown)}; corpora here: {', '.join(found)}")
    out = CHECKOUT / "docs" / "results" / f"configurations_{cpu}.json"
    results = read_json(out) or {"networks": {}}
    results["meta"] = {
        "cpu": cpu,
        "target": str(target),
        "tvm_threads": threads,
        "corpora": {n: str(found[n].configuration) for n in names},
        "command": " ".join(["python", *sys.argv]),
    }
    for name in args.models or zoo_names():
        logs = {
            n: (found[n], complete_log(found[n].logs / name, target, found[n].configuration))
            for n in names
        }
        logs = {n: pair for n, pair in logs.items() if pair[1] is not None}
        if not logs:
            print(f"{name}: no complete log in {', '.join(names)}, skipped", file=sys.stderr)
            continue
        row = compare(name, logs, target)
        results["networks"][name] = row
        write_json(out, results)
        print(f"{name} on {cpu}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in row["ms"].items()))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
