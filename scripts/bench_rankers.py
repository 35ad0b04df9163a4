"""The ranker's settings and features against the baselines, leave-one-model-out.

    python scripts/bench_rankers.py [--corpus NAME] [--out JSON]

Trains each learner below on the corpus's transfer-benefit dataset, leave-one-model-out (1-2 min
per learner on 2 cores), prints the mean top-k scores, recall and each network's top-1 score,
and writes them to ``docs/results/rankers_<corpus>.json``. With one to three heavy kernels
carrying most of a network's time, a small change of settings can flip a network's top-1 pick:
read differences of a few points at k = 1 as noise, and trust what holds across corpora.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from recommender.core import corpora, paths
from recommender.learn.cost_models import SCREEN_KEEP
from recommender.learn.dataset import dataset_provenance, load_dataset, training_targets
from recommender.learn.evaluation import leave_one_model_out, mean_metrics

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
    "xgb ndcg two-stage + relative to the kernel": (
        "two-stage",
        {"objective": "rank:ndcg", "keep": SCREEN_KEEP, "relative": True},
    ),
    "xgb ndcg, stored features only": ("xgb", {"objective": "rank:ndcg", "derived": False}),
    "xgb pairwise + shape distance": ("xgb", {"objective": "rank:pairwise"}),
    "xgb ndcg depth 4 + shape distance": ("xgb", {"objective": "rank:ndcg", "max_depth": 4}),
    "sklearn-hgb + shape distance": ("sklearn", {}),
    "nearest-shape": ("nearest-shape", {}),
    "best-home": ("best-home", {}),
    "random": ("random", {}),
}
COLUMNS = ("top1", "top2", "top3", "top5", "recall@1", "recall@3", "pairwise", "ndcg@5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=None, help="corpus name or path (default: the host's)")
    parser.add_argument("--out", type=Path, default=None, help="JSON to write")
    parser.add_argument(
        "--only", default=None, help="learners whose label contains one of these (comma-separated)"
    )
    args = parser.parse_args()
    learners = LEARNERS
    if args.only:
        words = args.only.split(",")
        learners = {label: v for label, v in LEARNERS.items() if any(w in label for w in words)}
        if not learners:
            parser.error(f"--only {args.only!r} matches none of: {', '.join(LEARNERS)}")
    corpus = paths.root() if args.corpus is None else Path(args.corpus)
    if not corpus.is_dir():
        corpus = corpora.CORPORA / args.corpus
    paths.use_corpus(corpus)
    directory = paths.transfer()
    results = leave_one_model_out(
        load_dataset(directory), learners, training_only=training_targets(directory)
    )
    means = mean_metrics(results)
    per_network = {r.network: {s: r.learners[s]["top1"] for s in learners} for r in results}
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
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
