"""How long ranking takes: apply, featurise and score every candidate of one network.

    python scripts/bench_ranking.py [MODEL] [--top-n 3] [--repeats 3]

Ranking is pure computation (no kernel is built or run), so it is what the zero-measurement mode
costs and what every budgeted run pays first. Sources are every other logged network. Prints the
median over ``--repeats`` of each phase and the per-candidate cost, without the feature cache
(a first run) and with it warm (a rerun). Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from recommender.core.targets import host_target
from recommender.evaluate.workflows import load_cost_model
from recommender.learn.feature_cache import FeatureCache
from recommender.logs.sources import load_sources, log_dir, resolve_sources
from recommender.networks.zoo import families, load_zoo_network
from recommender.recommend.ranking import rank_candidates
from recommender.tasks.extract import extract_tasks
from recommender.transfer.candidate import apply_candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="resnet50")
    parser.add_argument("--top-n", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-dir", default=None)
    args = parser.parse_args()

    target = host_target()
    model = load_cost_model(Path(args.model_dir) if args.model_dir else None, target)
    network = load_zoo_network(args.model)
    names = resolve_sources("all", network.name)
    start = time.perf_counter()
    sources = load_sources({n: log_dir(n) for n in names}, target, top_n=args.top_n)
    load_s = time.perf_counter() - start
    phases: dict[str, list[float]] = {"extract": [], "rank_cold": [], "rank_cached": []}
    with tempfile.TemporaryDirectory() as root:
        for repeat in range(args.repeats):
            start = time.perf_counter()
            tasks = extract_tasks(network, target)
            phases["extract"].append(time.perf_counter() - start)
            cache = FeatureCache(Path(root) / str(repeat))
            for phase in ("rank_cold", "rank_cached"):  # the first fills the cache
                kernels = apply_candidates(tasks, sources, target)
                start = time.perf_counter()
                ranked = rank_candidates(
                    kernels,
                    model,
                    target,
                    family_of=families(),
                    target_family=network.family,
                    cache=cache,
                )
                phases[phase].append(time.perf_counter() - start)
    candidates = sum(len(k.candidates) for k in kernels)
    applied = sum(len(r.candidates) for r in ranked)
    medians = {k: statistics.median(v) for k, v in phases.items()}
    rank_s = medians["rank_cold"]
    result = {
        "network": network.name,
        "sources": names,
        "top_n": args.top_n,
        "kernels": len(tasks),
        "candidates": candidates,
        "applied": applied,
        "load_sources_s": round(load_s, 2),
        "median_s": {k: round(v, 2) for k, v in medians.items()},
        "rank_all_s": round(rank_s, 2),
        "per_candidate_ms": round(1e3 * rank_s / max(candidates, 1), 2),
        "per_candidate_cached_ms": round(1e3 * medians["rank_cached"] / max(candidates, 1), 2),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
