"""The ranker's settings and features against the baselines, leave-one-model-out.

    python scripts/bench_rankers.py [--corpus NAME] [--only WORDS] [--nested] [--out JSON]

Trains each learner below on the corpus's transfer-benefit dataset, leave-one-model-out (1-2 min
per learner on 2 cores), prints the mean top-k scores, recall and each network's top-1 score,
and writes them to ``docs/results/rankers_<corpus>.json``. With one to three heavy kernels
carrying most of a network's time, a small change of settings can flip a network's top-1 pick:
read differences of a few points at k = 1 as noise, and trust what holds across corpora.
``--nested`` says what choosing among the trained rankers is worth on networks that took no part
in the choice (``learn.evaluation.nested_leave_one_model_out``): quote it, not the best row.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

from recommender.core import corpora, paths
from recommender.core.targets import host_target
from recommender.learn.cost_models import SCREEN_KEEP
from recommender.learn.dataset import dataset_provenance, load_dataset, training_targets
from recommender.learn.evaluation import (
    leave_one_model_out,
    mean_metrics,
    nested_leave_one_model_out,
)

LEARNERS = {
    "xgb ndcg + shape distance (shipped)": ("xgb", {"objective": "rank:ndcg"}),
    "xgb ndcg + shape distance + relative to the kernel": (
        "xgb",
        {"objective": "rank:ndcg", "relative": True},
    ),
    "xgb ndcg two-stage (as the recommender ranks)": (
        "two-stage",
        {"objective": "rank:ndcg", "keep": SCREEN_KEEP},
    ),
    "xgb ndcg two-stage, the screen keeps 16": (
        "two-stage",
        {"objective": "rank:ndcg", "keep": 16},
    ),
    "xgb ndcg two-stage, the screen keeps 48": (
        "two-stage",
        {"objective": "rank:ndcg", "keep": 48},
    ),
    "xgb ndcg two-stage + relative to the kernel": (
        "two-stage",
        {"objective": "rank:ndcg", "keep": SCREEN_KEEP, "relative": True},
    ),
    "xgb ndcg 31 grades (3% of throughput each) + shape distance": (
        "xgb",
        {"objective": "rank:ndcg", "grades": 31},
    ),
    "xgb ndcg 31 grades, linear gains + shape distance": (
        "xgb",
        {"objective": "rank:ndcg", "grades": 31, "exp_gain": False},
    ),
    "xgb ndcg, stored features only": ("xgb", {"objective": "rank:ndcg", "derived": False}),
    "xgb pairwise + shape distance": ("xgb", {"objective": "rank:pairwise"}),
    "xgb regression (squared error) + shape distance": (
        "xgb",
        {"objective": "reg:squarederror"},
    ),
    "xgb regression two-stage": (
        "two-stage",
        {"objective": "reg:squarederror", "keep": SCREEN_KEEP},
    ),
    "xgb ndcg depth 4 + shape distance": ("xgb", {"objective": "rank:ndcg", "max_depth": 4}),
    "sklearn-hgb + shape distance": ("sklearn", {}),
    "nearest-shape": ("nearest-shape", {}),
    "best-home": ("best-home", {}),
    "random": ("random", {}),
}
TRAINED = ("xgb", "two-stage", "sklearn")  # the learners with settings to choose among
COLUMNS = ("top1", "top2", "top3", "top5", "recall@1", "hit@1", "recall@3", "pairwise", "ndcg@5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=None, help="corpus name or path (default: the host's)")
    parser.add_argument("--out", type=Path, default=None, help="JSON to write")
    parser.add_argument(
        "--only", default=None, help="learners whose label contains one of these (comma-separated)"
    )
    parser.add_argument(
        "--nested",
        action="store_true",
        help="also choose among the trained rankers by nested leave-one-model-out (10x the time)",
    )
    args = parser.parse_args()
    learners = LEARNERS
    if args.only:
        words = args.only.split(",")
        learners = {label: v for label, v in LEARNERS.items() if any(w in label for w in words)}
        if not learners:
            parser.error(f"--only {args.only!r} matches none of: {', '.join(LEARNERS)}")
    corpus = corpora.choose(host_target(), args.corpus).corpus.root
    paths.use_corpus(corpus)
    directory = paths.transfer()
    kernels, training_only = load_dataset(directory), training_targets(directory)
    results = leave_one_model_out(kernels, learners, training_only=training_only)
    means = mean_metrics(results)
    per_network = {r.network: {s: r.learners[s]["top1"] for s in learners} for r in results}
    nested = _nested(kernels, learners, training_only, means) if args.nested else None
    out = args.out or paths.CHECKOUT / "docs" / "results" / f"rankers_{corpus.name}.json"
    out.write_text(
        json.dumps(
            {
                "command": " ".join(["python", *sys.argv]),
                "date": datetime.date.today().isoformat(),
                "dataset": str(directory.relative_to(paths.CHECKOUT)),
                "dataset_cpu": dataset_provenance(directory)["target"].get("mcpu"),
                "networks": len(results),
                "mean": means,
                "top1_per_network": per_network,
                "nested": nested,
            },
            indent=1,
        )
        + "\n"
    )
    width = max(map(len, learners))
    print(
        f"{'mean of ' + str(len(results)) + ' networks':{width}s}", *(f"{c:>8s}" for c in COLUMNS)
    )
    for label, metrics in means.items():
        print(f"{label:{width}s}", *(f"{metrics.get(c, float('nan')):8.3f}" for c in COLUMNS))
    print("\ntop-1 per held-out network:")
    for network, scores in per_network.items():
        print(f"{network:16s}", *(f"{scores[s]:.3f}" for s in learners))
    if nested:
        print(
            f"\nnested leave-one-model-out over the trained rankers, chosen by top-1: "
            f"{nested['mean']['top1']:.3f} top-1, {nested['mean']['recall@1']:.3f} recall@1, "
            f"{nested['mean']['hit@1']:.3f} hit@1 "
            f"(chosen on all networks: {nested['chosen_on_all']!r}, "
            f"{means[nested['chosen_on_all']]['top1']:.3f})"
        )
        for network, fold in nested["folds"].items():
            print(f"{network:16s} {fold['metrics']['top1']:.3f}  {fold['chosen']}")
    print(f"\nwritten: {out}")


def _nested(kernels, learners: dict, training_only, means: dict) -> dict:
    """Nested selection among the trained rankers (the heuristics need no choosing): what
    choosing a setting, then ranking, scores on networks that took no part in the choice."""
    trained = {label: v for label, v in learners.items() if v[0] in TRAINED}
    folds = nested_leave_one_model_out(kernels, trained, training_only=training_only)
    return {
        "settings": list(trained),
        "chosen_on_all": max(trained, key=lambda label: means[label]["top1"]),
        "mean": {c: float(np.nanmean([f.metrics.get(c, np.nan) for f in folds])) for c in COLUMNS},
        "folds": {
            f.network: {"chosen": f.chosen, "inner_top1": f.inner, "metrics": f.metrics}
            for f in folds
        },
    }


if __name__ == "__main__":
    main()
