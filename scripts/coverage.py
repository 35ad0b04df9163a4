"""Which share of each network's FLOPs the corpus can schedule: kernels with a candidate that
applies, exact-only (the paper's kernel classes) and with anchor-level candidates.

    python scripts/coverage.py [NETWORK ...] [--corpus NAME]

Leave-one-model-out (a network's own log is never a source), the 3 best records per source
workload, every candidate applied (no build, no timing: the correctness check and the timing
come later, in ``recommend``). Writes ``docs/results/coverage_<corpus>.json`` as it goes.
"""

from __future__ import annotations

import argparse

from recommender.core import corpora, paths
from recommender.core.targets import host_target
from recommender.evaluate.searches import read_json, write_json
from recommender.logs.sources import load_sources, log_dir, logged_models
from recommender.networks.zoo import load_zoo_network, zoo_names
from recommender.tasks.extract import extract_tasks
from recommender.transfer.apply import Level
from recommender.transfer.candidate import apply_candidates
from recommender.transfer.coverage import KernelOutcome, coverage

NO_SCHEDULE = ("no candidate of its class", "no candidate applies")  # nothing is timed here


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("networks", nargs="*", help="zoo networks (default: every one)")
    parser.add_argument("--corpus", default=None, help="corpus name or path (default: chosen)")
    args = parser.parse_args()
    target = host_target()
    choice = corpora.choose(target, explicit=args.corpus)
    paths.use_corpus(choice.corpus.root)
    out = paths.CHECKOUT / "docs" / "results" / f"coverage_{choice.corpus.name}.json"
    results = read_json(out) or {}
    logged = logged_models()
    sources = load_sources({n: log_dir(n) for n in logged}, target, top_n=3)
    for name in args.networks or zoo_names():
        tasks = extract_tasks(load_zoo_network(name), target)
        others = [s for s in sources if s.model != name]
        row = {}
        for label, levels in (("exact", (Level.EXACT,)), ("anchor", (Level.EXACT, Level.ANCHOR))):
            kernels = apply_candidates(tasks, others, target, levels=levels)
            found = coverage(KernelOutcome(k.task, k.candidates, None) for k in kernels).to_json()
            row[label] = {
                "applies": found["applies"],
                "candidates": sum(len(k.candidates) for k in kernels),
                "unscheduled": [
                    {key: u[key] for key in ("task", "flop_share", "reason", "detail")}
                    for u in found["unscheduled"]
                    if u["reason"] in NO_SCHEDULE
                ],
            }
        results[name] = row
        write_json(out, results)
        share = {k: 1 - v["applies"]["none"] for k, v in row.items()}
        print(
            f"{name}: FLOPs with a candidate that applies: exact-only {share['exact']:.2%}, "
            f"with anchor {share['anchor']:.2%}",
            flush=True,
        )
    print(f"written: {out}")


if __name__ == "__main__":
    main()
