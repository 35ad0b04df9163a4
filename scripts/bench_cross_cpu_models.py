"""One cost model for several CPUs? Leave-one-model-out on each corpus's own timings, ranked by
the model of that CPU, of the other CPU, and of both corpora pooled.

    python scripts/bench_cross_cpu_models.py [--corpora znver3,rocketlake] [--json]

For each corpus C and each network N of it: the test set is C's kernels of N with C's timings;
the models are trained without N's kernels and without rows whose source is N on C's dataset
(``own``), on another corpus's (``other``: what a CPU without a corpus gets today) and on both
pooled (``pooled``: the CPU is not named; the model sees each CPU's timings through the same
features). Reported: top-1/top-3 score (the share of the best candidate's speed that the
model's first 1 or 3 reach, weighted by the kernel's untuned time), recall@1. Writes
``docs/results/cross_cpu_models.json``. CPU-heavy (33 fits per corpus); no timing.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from recommender.core import paths
from recommender.core.corpora import CORPORA
from recommender.learn.cost_models import OBJECTIVE
from recommender.learn.dataset import load_dataset
from recommender.learn.evaluation import network_metrics
from recommender.learn.training import check_trainable, fit_ranker, training_set

METRICS = ("top1", "top3", "recall@1")


def held_out_scores(test_kernels, train_kernels, network: str) -> dict[str, float] | None:
    train = training_set([k for k in train_kernels if k.network != network], exclude_source=network)
    test = training_set(test_kernels)
    check_trainable(train, f"training without {network}")
    if not test.groups:
        return None
    scores = fit_ranker("xgb", train, objective=OBJECTIVE).predict(test.X)
    metrics = network_metrics(test, scores)
    return {m: round(metrics[m], 4) for m in METRICS if m in metrics}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default="znver3,rocketlake", help="corpus names")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    names = args.corpora.split(",")
    data = {n: load_dataset(CORPORA / n / "datasets" / "transfer") for n in names}
    results: dict[str, dict] = {}
    for name in names:
        other = [k for n in names if n != name for k in data[n]]
        models = {"own": data[name], "other": other, "pooled": data[name] + other}
        rows = {}
        for network in sorted({k.network for k in data[name]}):
            test = [k for k in data[name] if k.network == network]
            rows[network] = {
                m: held_out_scores(test, kernels, network) for m, kernels in models.items()
            }
            print(name, network, rows[network], flush=True)
        means = {
            model: {
                metric: round(float(np.mean([r[model][metric] for r in rows.values()])), 4)
                for metric in METRICS
            }
            for model in models
        }
        results[name] = {"networks": rows, "means": means}
    out = paths.CHECKOUT / "docs" / "results" / "cross_cpu_models.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name, result in results.items():
        print(f"\nevaluated on {name}'s timings (mean over {len(result['networks'])} networks):")
        for model, metrics in result["means"].items():
            print(f"  {model:7s} " + "  ".join(f"{m} {v:.3f}" for m, v in metrics.items()))
    print(f"written: {out}")


if __name__ == "__main__":
    main()
