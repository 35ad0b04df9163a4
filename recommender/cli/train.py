"""``recommender train`` and ``evaluate-model``: the cost model, fitted and evaluated."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..core import paths
from .common import (
    add_command,
    dataset_option,
    format_table,
    pool_with_option,
    print_json,
    relative,
)

COLUMNS = ["top1", "top5", "recall@1", "hit@1", "recall@3", "pairwise", "ndcg@5"]


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "train", cmd_train, "train the cost model (rankers and classifiers) on a dataset"
    )
    p.add_argument("networks", nargs="*", help="train on these networks' kernels only")
    dataset_option(p)
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="model directory (default: the corpus's models/default)",
    )
    pool_with_option(p)
    p.add_argument(
        "--objective",
        choices=["rank:pairwise", "rank:ndcg", "reg:squarederror"],
        help="XGBoost objective: a ranking one, or pointwise regression of the normalised "
        "throughput (default rank:ndcg, which led the leave-one-model-out evaluation at k >= 2)",
    )

    p = add_command(
        sub,
        "evaluate-model",
        cmd_evaluate_model,
        "leave-one-model-out evaluation of every learner and baseline on a dataset",
    )
    dataset_option(p)
    pool_with_option(p)  # trained on, never scored
    p.add_argument("--plot", type=Path, default=None, help="write the score-vs-k plot (PNG)")
    p.add_argument(
        "--throughput-baseline",
        action="store_true",
        help="also evaluate MetaSchedule's XGB throughput model pre-trained on the corpus logs "
        "(approximated: learn/throughput_baseline.py); featurising the logs' records takes "
        "about 5-8 min per corpus the first time, then it is cached",
    )
    p.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="the tuning logs for --throughput-baseline (default: the dataset's sibling "
        "../logs, else the corpus's datasets/logs)",
    )


def cmd_train(args) -> int:
    from ..core.targets import parse_target
    from ..learn.dataset import dataset_provenance, load_dataset, training_targets
    from ..learn.fit import fit_and_save

    datasets = [args.dataset, *args.pool_with]
    kernels = [k for d in datasets for k in load_dataset(d, networks=args.networks or None)]
    targets = [dataset_provenance(d)["target"] for d in datasets]
    out = args.out or paths.default_model()
    options = {"objective": args.objective} if args.objective else {}
    describe = {"directory": relative(args.dataset)}
    if args.pool_with:
        describe |= {
            "pooled": [relative(d) for d in datasets],
            "cpus": [t["mcpu"] for t in targets],
        }
    model = fit_and_save(
        kernels,
        out,
        parse_target(json.dumps(targets[0])),
        describe=describe,
        training_only=set().union(*map(training_targets, datasets)),
        **options,
    )
    data = model.metadata["training_data"]
    result = {"model": str(out), "kernels": data["kernels"], "candidates": data["candidates"]}
    if args.json:
        print_json(result)
    else:
        print(f"trained on {data['kernels']} kernels, {data['candidates']} candidates -> {out}")
    return 0


def cmd_evaluate_model(args) -> int:
    from ..learn.dataset import load_dataset, training_targets
    from ..learn.evaluation import leave_one_model_out, mean_metrics, worst_networks

    learners = None
    if args.throughput_baseline:
        learners = _with_throughput_baseline(args.dataset, args.logs)
    results = leave_one_model_out(
        load_dataset(args.dataset),
        learners,
        training_only=training_targets(args.dataset),
        pooled=[k for d in args.pool_with for k in load_dataset(d)],
        progress=True,
    )
    means = mean_metrics(results)
    if args.plot:
        _plot_score_vs_k(results, means, args.plot)
    if args.json:
        print_json(
            {
                "networks": [vars(r) for r in results],
                "mean": means,
                "worst_top1": worst_networks(results),
                "plot": str(args.plot) if args.plot else None,
            }
        )
        return 0
    _print_evaluation(results, means)
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _plot_score_vs_k(results: list, means: dict, path: Path) -> None:
    """Mean top-k score over held-out networks, one line per learner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..learn.evaluation import KS

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, metrics in means.items():
        ax.plot(KS, [metrics[f"top{k}"] for k in KS], marker="o", label=label)
    ax.axhline(1.0, color="grey", linestyle=":", label="time all (paper)")
    ax.set_xlabel("candidates timed per kernel (k)")
    ax.set_ylabel("top-k score (1 = best of all candidates)")
    ax.set_title(f"Leave-one-model-out over {len(results)} networks")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _with_throughput_baseline(dataset: Path, logs: Path | None) -> dict:
    """Every learner and the throughput baseline, its records featurised (or read from the
    cache) for the dataset's target."""
    from ..core.targets import parse_target
    from ..learn.dataset import dataset_provenance
    from ..learn.evaluation import with_throughput_baseline
    from ..learn.throughput_baseline import corpus_logs, record_features

    if logs is None:
        logs = dataset.parent / "logs" if (dataset.parent / "logs").is_dir() else paths.logs()
    target = parse_target(json.dumps(dataset_provenance(dataset)["target"]))
    return with_throughput_baseline(record_features(corpus_logs(logs), target))


def _classifier_cells(metrics: dict) -> list:
    """``evaluation.classifier_metrics`` as table cells: positives, precision, recall."""
    return [metrics["positives"], f"{metrics['precision']:.2f}", f"{metrics['recall']:.2f}"]


def _print_untimed(results: list) -> None:
    """Per held-out network, the first learner's untimed choices summed over kernels: untuned,
    the ranker's picks alone, and the picks the slower classifier lets through (ms)."""
    first = next(iter(results[0].learners))
    rows = []
    for r in results:
        kinds = r.untimed[first].values()
        rows.append([r.network, *(f"{sum(v[i] for v in kinds) * 1e3:.3f}" for i in (1, 2, 3))])
    print(f"\nnothing timed, {first} (ms, weighted by occurrences):")
    print(format_table(rows, ["held out", "untuned", "ranked pick", "with slower classifier"]))


def _print_evaluation(results: list, means: dict) -> None:
    """Every learner's metrics per held-out network, their means with the worst network, and
    failure prediction."""
    from ..learn.evaluation import worst_networks

    rows = []
    for held in results:
        for label, metrics in held.learners.items():
            cells = [f"{metrics.get(c, float('nan')):.3f}" for c in COLUMNS]
            rows.append([held.network, held.kernels, held.candidates, label, *cells, ""])
    worst = worst_networks(results)
    for label, metrics in means.items():
        cells = [f"{metrics.get(c, float('nan')):.3f}" for c in COLUMNS]
        rows.append(["mean", "", "", label, *cells, f"{worst[label][1]:.3f} {worst[label][0]}"])
    header = ["held out", "kernels", "cands", "learner", *COLUMNS, "worst top1"]
    print(format_table(rows, header))
    classifiers = [
        [
            r.network,
            r.failure["candidates"],
            *_classifier_cells(r.failure),
            *_classifier_cells(r.slower),
        ]
        for r in results
    ]
    first = next(iter(results[0].learners))
    levels = [
        [
            r.network,
            f"{r.levels.get('anchor_only_kernels', float('nan')):.2f}",
            f"{r.levels.get('exact_only_top1', float('nan')):.3f}",
            f"{r.learners[first].get('first_pick_anchor', float('nan')):.2f}",
        ]
        for r in results
    ]
    print("\nlevels (an exact-only pool is the paper's; the anchor level adds the rest):")
    header = ["held out", "kernels anchor-only", "exact-only top1", f"{first}: first pick anchor"]
    print(format_table(levels, header))
    print("\nthe classifiers (P > 0.5): failure; slower than the untuned kernel (or failing)")
    cells = ("positives", "precision", "recall")
    header = ["held out", "cands", *(f"{c} {cell}" for c in ("fail", "slower") for cell in cells)]
    print(format_table(classifiers, header))
    _print_untimed(results)
    print(
        "\nexhaustive transfer-tuning (the paper) times every candidate: top-k score 1.0 by "
        "definition, at the cost of timing all of them"
    )
