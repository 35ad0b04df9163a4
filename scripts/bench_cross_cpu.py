"""Schedules across CPUs: what corpora tuned on other CPUs give this one, against tuning here.

    python scripts/bench_cross_cpu.py MODEL --recommended CORPUS[:VARIANT]=DIR ...
        [--here CORPUS] [--out JSON]

Before: ``recommender recommend MODEL --corpus CORPUS --out DIR`` for each corpus (the
recommender's choice from that corpus's logs of the other networks, ranked by the model
``corpora.choose`` gives it; a ``:VARIANT`` names another run from the same corpus, e.g. with
``--model-dir``), and a complete log of MODEL in this CPU's corpus (``--here``, default
``corpora/<this CPU>/``). Builds, each prepared in its corpus's configuration (layout,
fast math): each recommendation; each of those corpora's own log of MODEL, tuned on its CPU and
replayed here; MetaSchedule tuned here. Every build is checked against the untuned native build,
then all are timed in one interleaved run with PyTorch eager and ONNX Runtime where installed;
then how long the tuning here took to match each. Which corpus a CPU without its own should
read comes from this (``recommender.core.corpora.choose``). Writes JSON (default
``docs/results/cross_cpu_<this CPU>_<MODEL>.json``). Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from recommender.core import corpora
from recommender.core.configuration import DEFAULT, Configuration
from recommender.core.corpora import CHECKOUT
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate import endtoend
from recommender.evaluate.baselines import MetaScheduleBuilds
from recommender.evaluate.comparison import baselines
from recommender.evaluate.searches import write_json
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import load_zoo_network
from recommender.tasks.extract import prepare

UNTUNED = "untuned (native)"
HERE = "MetaSchedule here"


def corpus_dir(value: str) -> tuple[str, Path]:
    name, sep, directory = value.partition("=")
    if not sep or not name or not directory:
        raise argparse.ArgumentTypeError(f"expected CORPUS[:VARIANT]=DIR, got {value!r}")
    return name, Path(directory)


def run_label(run: str) -> str:
    """``znver5:own-model`` -> ``recommended from znver5 (own-model)``."""
    name, _, variant = run.partition(":")
    return f"recommended from {name}" + (f" ({variant})" if variant else "")


def summary(corpus: corpora.Corpus, directory: Path) -> dict:
    """Which corpus and cost model a recommendation came from, and its search time."""
    report = json.loads((directory / "report.json").read_text())
    return {
        "cpu": corpus.cpu,
        "configuration": str(corpus.configuration),
        "cost_model": report.get("cost_model"),
        "recommender_search_s": report["search_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a zoo network")
    parser.add_argument(
        "--recommended", type=corpus_dir, nargs="+", required=True, metavar="CORPUS[:VARIANT]=DIR"
    )
    parser.add_argument("--here", default=None, help="this CPU's corpus (default: corpora/<cpu>)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    target = host_target()
    threads = use_target_threads(target)
    cpu = str(target.attrs["mcpu"])
    found = {c.name: c for c in corpora.find_corpora()}
    recommended = dict(args.recommended)
    corpus_of = {run: found.get(run.partition(":")[0]) for run in recommended}
    here = found.get(args.here or cpu)
    unknown = sorted(r for r, c in corpus_of.items() if c is None) or (
        [] if here else [args.here or cpu]
    )
    if unknown:
        parser.error(f"no corpus {', '.join(unknown)}; corpora here: {', '.join(found)}")
    for run, directory in recommended.items():
        if not (directory / "report.json").is_file():
            corpus = run.partition(":")[0]
            parser.error(f"{directory}: no report.json (run recommend with --corpus {corpus})")

    network = load_zoo_network(args.model)
    prepared: dict[Configuration, endtoend.Builds] = {}

    def builds(configuration: Configuration) -> endtoend.Builds:
        """One set of builds per way of preparing the network."""
        if configuration not in prepared:
            module = prepare(network.mod, target, configuration)
            prepared[configuration] = endtoend.Builds(module, target)
        return prepared[configuration]

    builds(DEFAULT).want(UNTUNED)
    labels: dict[str, Configuration] = {}
    for run, directory in recommended.items():
        corpus = corpus_of[run]
        labels[run_label(run)] = corpus.configuration
        builds(corpus.configuration).want(run_label(run), directory)
        log, replayed = corpus.logs / args.model, f"{corpus.name} log, replayed"
        if corpus != here and replayed not in labels and (log / "provenance.json").is_file():
            labels[replayed] = corpus.configuration
            builds(corpus.configuration).want(replayed, TuningLog.open(log).path)
    log_here = TuningLog.open(
        here.logs / args.model,
        target=target,
        configuration=here.configuration,
    )
    tuned_here = MetaScheduleBuilds(
        network, builds(here.configuration).prepared, target, log_here, builds(here.configuration)
    )
    tuned_here.want([tuned_here.tuning_s])
    made = {label: builds(c).get(label) for label, c in labels.items()}
    made[HERE] = tuned_here.at(tuned_here.tuning_s)
    reference = endtoend.ReferenceOutputs(builds(DEFAULT).get(UNTUNED), network)
    executables, wrong = reference.partition(made)
    others, missing = baselines(args.model, threads)
    times = endtoend.time_interleaved(executables, network, others=others)
    matched = tuned_here.times_to_match(
        {label: (executables[label], 0.0, None) for label in executables if label != HERE}
    )
    result = {
        "network": args.model,
        "this_cpu": cpu,
        "ms": {label: round(t * 1e3, 3) for label, t in times.items()},
        "recommended": {run: summary(corpus_of[run], d) for run, d in recommended.items()},
        "here": {
            "corpus": here.name,
            "configuration": str(here.configuration),
            "tuning_s": round(tuned_here.tuning_s, 1),
            "budget": log_here.provenance().get("budget", {}),
            "to_match_s": matched,
        },
        "wrong": wrong,
        "baselines_missing": missing,
    }
    out = args.out or CHECKOUT / "docs" / "results" / f"cross_cpu_{cpu}_{args.model}.json"
    write_json(out, result)
    print(f"{args.model} on {cpu}, MetaSchedule tuned here in {tuned_here.tuning_s:.0f} s:")
    for label, seconds in sorted(times.items(), key=lambda kv: kv[1]):
        line = f"  {label:32s} {seconds * 1e3:9.2f} ms"
        if label in matched:
            when = matched[label]
            line += (
                "  tuning here never matched it"
                if when is None
                else f"  matched after {when:.0f} s"
            )
        print(line)
    for label, problem in wrong.items():
        print(f"  {label}: wrong outputs, not timed ({problem})")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
