"""How much the leave-one-model-out scores move with the ranker's settings.

    python scripts/bench_rankers.py [--json]

Trains each XGBoost setting below on the transfer-benefit dataset, leave-one-model-out (2-3 min
per setting on 2 cores), and prints the mean top-k scores and each network's top-1 score. With
one to three heavy kernels carrying most of a network's time, a small change of settings can
flip a network's top-1 pick: read differences of a few points at k = 1 as noise, and trust what
holds across settings.
"""

from __future__ import annotations

import argparse
import json

from recommender.core import paths
from recommender.learn.dataset import load_dataset
from recommender.learn.evaluation import leave_one_model_out, mean_metrics

SETTINGS = {
    "pairwise": {"objective": "rank:pairwise"},
    "pairwise depth 4": {"objective": "rank:pairwise", "max_depth": 4},
    "ndcg (shipped)": {"objective": "rank:ndcg"},
    "ndcg depth 4": {"objective": "rank:ndcg", "max_depth": 4},
    "ndcg 600 trees lr 0.05": {
        "objective": "rank:ndcg",
        "n_estimators": 600,
        "learning_rate": 0.05,
    },
}
COLUMNS = ("top1", "top2", "top3", "top5", "recall@1", "recall@3", "pairwise", "ndcg@5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    results = leave_one_model_out(
        load_dataset(paths.transfer()), {label: ("xgb", p) for label, p in SETTINGS.items()}
    )
    means = mean_metrics(results)
    per_network = {r.network: {s: r.learners[s]["top1"] for s in SETTINGS} for r in results}
    if args.json:
        print(json.dumps({"mean": means, "top1_per_network": per_network}, indent=1))
        return
    width = max(map(len, SETTINGS))
    print(
        f"{'mean of ' + str(len(results)) + ' networks':{width}s}", *(f"{c:>8s}" for c in COLUMNS)
    )
    for label, metrics in means.items():
        print(f"{label:{width}s}", *(f"{metrics[c]:8.3f}" for c in COLUMNS))
    print(f"\ntop-1 per held-out network: {' | '.join(SETTINGS)}")
    for network, scores in per_network.items():
        print(f"{network:16s}", *(f"{scores[s]:.3f}" for s in SETTINGS))


if __name__ == "__main__":
    main()
