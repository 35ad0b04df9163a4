"""The ``recommender`` command: a thin layer over the library; ``--json`` for scripts."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from ..core import paths
from ..core.errors import InputError, RecommenderError
from ..core.interrupts import ctrl_c_stops_gently


def _print_json(data) -> None:
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")


def _relative(path: Path) -> str:
    """A path inside the checkout as written in shipped metadata: relative, so it moves."""
    path = path.resolve()
    return str(path.relative_to(paths.root())) if path.is_relative_to(paths.root()) else str(path)


def _table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cmd_zoo(args) -> int:
    from ..networks.zoo import zoo_index

    entries = [entry.to_json() for entry in zoo_index().values()]
    if args.json:
        _print_json(entries)
        return 0
    rows = [
        [
            e["name"],
            e["family"],
            ", ".join(f"{i['name']}{i['shape']} {i['dtype']}" for i in e["inputs"]),
        ]
        for e in entries
    ]
    print(_table(rows, ["model", "family", "inputs"]))
    return 0


def cmd_tasks(args) -> int:
    from ..core.targets import parse_target
    from ..networks.frontends import load_network
    from ..tasks.extract import extract_tasks

    target = parse_target(args.target)
    network = load_network(args.model)
    tasks = extract_tasks(network, target)
    if args.json:
        _print_json(
            {"model": network.name, "target": str(target), "tasks": [t.to_json() for t in tasks]}
        )
        return 0
    rows = [
        [t.name, t.kernel_class.key, t.weight, f"{t.descriptor.flops / 1e6:.1f}"] for t in tasks
    ]
    print(
        f"{network.name}: {len(tasks)} tasks, "
        f"{len({t.kernel_class.key for t in tasks})} kernel classes, target {target}"
    )
    print(_table(rows, ["task", "kernel class", "weight", "MFLOP"]))
    return 0


def cmd_collect(args) -> int:
    from ..core.targets import RemoteDevice, parse_target
    from ..logs.collect import collect
    from ..networks.frontends import load_network

    target = parse_target(args.target)
    remote = RemoteDevice.parse(args.rpc) if args.rpc else None
    summaries = []
    for spec in args.models:
        network = load_network(spec)
        work_dir = paths.logs() / network.name if args.out is None else args.out / network.name
        summary = collect(
            network,
            target,
            work_dir,
            trials_per_task=args.trials_per_task,
            minutes=args.minutes,
            remote=remote,
            trials_per_iter=args.trials_per_iter,
            population=args.population,
            progress=not args.json,
        )
        summaries.append(summary)
        if not args.json:
            print(
                f"{summary.network}: {summary.status}; {summary.trials_this_run} trials "
                f"({summary.failures_this_run} failed) in {summary.wall_s:.0f} s, "
                f"{summary.trials_before + summary.trials_this_run}/{summary.budget_trials} "
                f"in {summary.work_dir}"
            )
            rows = [[task, f"{s * 1e3:.4f}"] for task, s in sorted(summary.best_s.items())]
            print(_table(rows, ["task", "best ms"]))
        if summary.status == "interrupted":
            break
    if args.json:
        _print_json([s.to_json() for s in summaries])
    return 130 if summaries and summaries[-1].status == "interrupted" else 0


def cmd_transfer_tune(args) -> int:
    from ..core.targets import RemoteDevice, parse_target
    from ..evaluate.workflows import transfer_tune_to_dir
    from ..logs.sources import log_dir, resolve_sources
    from ..networks.frontends import load_network
    from ..transfer.report import table

    target = parse_target(args.target)
    network = load_network(args.model)
    report = transfer_tune_to_dir(
        network,
        target,
        {m: log_dir(m) for m in resolve_sources(args.sources, network.name)},
        args.out,
        top_n=args.top_n,
        remote=RemoteDevice.parse(args.rpc) if args.rpc else None,
        progress=not args.json,
    )
    if args.json:
        _print_json(report)
    else:
        print(table(report))
        print(f"database, library and report.json in {args.out}")
    return 0


def cmd_compare(args) -> int:
    from ..core.targets import parse_target
    from ..evaluate.workflows import compare_with_metaschedule
    from ..networks.frontends import load_network

    target = parse_target(args.target)
    network = load_network(args.model)
    log = args.log or paths.logs() / network.name
    row = compare_with_metaschedule(network, target, args.transfer, log)
    if args.json:
        _print_json(row)
        return 0
    e2e = row["end_to_end_ms"]
    budget = row["metaschedule_budget"].get("trials_per_task", "?")
    match = row["metaschedule_time_to_match_s"]
    print(
        _table(
            [
                [
                    row["network"],
                    f"{e2e['untuned']:.3f}",
                    f"{e2e['transfer']:.3f}",
                    f"{e2e['metaschedule']:.3f}",
                    f"{e2e['metaschedule_same_time']:.3f}",
                    f"{row['speedup']:.2f}",
                    f"{row['max_speedup']:.2f}",
                    "-"
                    if row["share_of_max_speedup"] is None
                    else f"{100 * row['share_of_max_speedup']:.1f}%",
                    f"{row['search_s']:.0f}",
                    "never" if match is None else f"{match:.0f}",
                    "-" if match is None else f"{row['time_to_match_over_search']:.1f}x",
                ]
            ],
            [
                "network",
                "untuned ms",
                "transfer ms",
                "MS full ms",
                "MS same-time ms",
                "speedup",
                "max speedup",
                "share of max",
                "search s",
                "MS to match s",
                "ratio",
            ],
        )
    )
    print(f"MetaSchedule: {budget} trials/task, {row['metaschedule_tuning_s']:.0f} s of tuning")
    print(f"note: {row['note']}")
    return 0


def cmd_dataset_build(args) -> int:
    from ..core.targets import RemoteDevice, parse_target
    from ..learn.dataset import build_dataset
    from ..logs.sources import log_dir
    from ..networks.zoo import load_zoo_network, zoo_names

    target = parse_target(args.target)
    names = args.networks or [n for n in zoo_names() if (paths.logs() / n).is_dir()]
    logs = {n: log_dir(n) for n in names}
    written = build_dataset(
        {n: load_zoo_network(n) for n in names},
        logs,
        args.out,
        target,
        top_n=args.top_n,
        remote=RemoteDevice.parse(args.rpc) if args.rpc else None,
        progress=not args.json,
    )
    result = {"directory": str(args.out), "kernels": len(written), "networks": names}
    if args.json:
        _print_json(result)
    else:
        print(f"{len(written)} kernels of {len(names)} networks in {args.out}")
    return 0


def cmd_train(args) -> int:
    from ..core.targets import parse_target
    from ..learn import cost_models
    from ..learn.dataset import dataset_provenance, load_dataset
    from ..learn.evaluation import recall_curve
    from ..learn.training import train, training_set

    kernels = load_dataset(args.dataset, networks=args.networks or None)
    data = training_set(kernels)
    provenance = dataset_provenance(args.dataset)
    target = parse_target(json.dumps(provenance["target"]))
    options = {"objective": args.objective} if args.objective else {}
    model = train(data, **options)
    evaluation = recall_curve(kernels, **options)
    cost_models.save(
        model,
        args.out,
        target=target,
        data={
            "directory": _relative(args.dataset),
            "networks": sorted({k.network for k in data.kernels}),
            "kernels": data.groups,
            "candidates": len(data.y),
            "hash": data.data_hash(),
        },
        evaluation=evaluation,
    )
    result = {"model": str(args.out), "kernels": data.groups, "candidates": len(data.y)}
    if args.json:
        _print_json(result)
    else:
        print(f"trained on {data.groups} kernels, {len(data.y)} candidates -> {args.out}")
    return 0


def cmd_evaluate_model(args) -> int:
    from ..learn.dataset import load_dataset
    from ..learn.evaluation import leave_one_model_out, mean_metrics, plot_score_vs_k

    results = leave_one_model_out(load_dataset(args.dataset))
    means = mean_metrics(results)
    if args.plot:
        plot_score_vs_k(results, args.plot)
    if args.json:
        _print_json(
            {
                "networks": [vars(r) for r in results],
                "mean": means,
                "plot": str(args.plot) if args.plot else None,
            }
        )
        return 0
    columns = ["top1", "top5", "recall@1", "recall@3", "pairwise", "ndcg@5"]
    rows = []
    for held in results:
        for label, metrics in held.learners.items():
            cells = [f"{metrics.get(c, float('nan')):.3f}" for c in columns]
            rows.append([held.network, held.kernels, held.candidates, label, *cells])
    for label, metrics in means.items():
        rows.append(
            ["mean", "", "", label, *[f"{metrics.get(c, float('nan')):.3f}" for c in columns]]
        )
    print(_table(rows, ["held out", "kernels", "cands", "learner", *columns]))
    failure = [
        [
            r.network,
            r.failure["failures"],
            r.failure["candidates"],
            f"{r.failure['precision']:.2f}",
            f"{r.failure['recall']:.2f}",
        ]
        for r in results
    ]
    print("\nfailure prediction (P(fail) > 0.5):")
    print(_table(failure, ["held out", "failures", "cands", "precision", "recall"]))
    print(
        "\nexhaustive transfer-tuning (the paper) times every candidate: top-k score 1.0 by "
        "definition, at the cost of timing all of them"
    )
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def cmd_recommend(args) -> int:
    from ..core.targets import RemoteDevice
    from ..evaluate.workflows import load_cost_model, recommend_to_dir
    from ..learn.feature_cache import FeatureCache
    from ..logs.sources import log_dir, resolve_sources
    from ..networks.frontends import load_network
    from ..recommend.profiles import PROFILES
    from ..recommend.report import recommendation_table
    from ..recommend.search import Budget

    given = Budget(top_k=args.top_k, trials=args.trials, seconds=args.budget)
    target, budget, top_n = PROFILES[args.profile].settings(
        args.target, given if given.to_json() else None, args.top_n
    )
    remote = RemoteDevice.parse(args.rpc) if args.rpc else None
    model = load_cost_model(args.model_dir, target)
    network = load_network(args.model)
    report = recommend_to_dir(
        network,
        target,
        {m: log_dir(m) for m in resolve_sources(args.sources, network.name)},
        model,
        budget,
        args.out,
        top_n=top_n,
        then_tune_trials=args.then_tune,
        remote=remote,
        cache=None if args.no_cache else FeatureCache(),
        progress=not args.json,
    )
    if args.json:
        _print_json(report)
    else:
        print(recommendation_table(report))
        if "then_tune" in report:
            print(
                f"then-tune: {report['then_tune']['trials']} records; curves in "
                f"{report['then_tune']['plot']}"
            )
        print(f"database, library and report.json in {args.out}")
    return 0


def cmd_evaluate(args) -> int:
    from ..core.targets import RemoteDevice
    from ..evaluate.benchmark import METHODS, QUICK_GRID, QUICK_METHODS, QUICK_NETWORKS, evaluate
    from ..evaluate.results_page import write_page
    from ..networks.zoo import zoo_entry, zoo_names
    from ..recommend.profiles import PROFILES

    networks = args.networks or list(QUICK_NETWORKS if args.quick else zoo_names())
    for name in networks:
        zoo_entry(name)  # a typo stops here, not after the other networks' runs
    methods = (
        args.methods.split(",") if args.methods else list(QUICK_METHODS if args.quick else METHODS)
    )
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InputError(f"unknown method {unknown[0]!r}; known: {', '.join(METHODS)}")
    target, _, _ = PROFILES[args.profile].settings(args.target, None, None)
    remote = RemoteDevice.parse(args.rpc) if args.rpc else None
    if remote is not None:
        remote.check()
    out, default_page = paths.evaluation_outputs(args.profile, args.quick)
    out = args.out or out
    page = default_page if args.page is True else args.page
    command = " ".join(
        ["recommender evaluate", *networks, "--methods", ",".join(methods)]
        + (["--quick"] if args.quick else [])
        + ([f"--profile {args.profile}"] if args.profile != "server" else [])
    )
    results = evaluate(
        networks,
        methods,
        out,
        target,
        dataset_dir=args.dataset,
        grid_points=args.grid or (QUICK_GRID if args.quick else 8),
        refine=not args.quick,
        remote=remote,
        progress=not args.json,
        on_results=(lambda results: write_page(results, page, command)) if page else None,
    )
    if args.json:
        _print_json(results)
        return 0
    rows = [
        [
            name,
            m.get("networks", 0),
            m.get("speedup"),
            m.get("share_of_max_speedup"),
            m.get("search_s"),
            m.get("time_to_match_over_search"),
        ]
        for name, m in results["means"].items()
    ]
    print(_table(rows, ["method", "networks", "speedup", "share of max", "search s", "ttm/search"]))
    print(f"every number in {out / 'results.json'}" + (f"; page {page}" if page else ""))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recommender",
        description="Reuse tuned TVM schedules across DNNs: tasks, log collection, transfer.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, func: Callable, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        p.set_defaults(func=func)
        return p

    def profile_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--profile",
            choices=["server", "edge"],
            default="server",
            help="server: every core, --top-k 3; edge: 1 core (TVM_NUM_THREADS=1), --budget 60, "
            "--top-n 1; explicit options override",
        )

    def target_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--target",
            default=None,
            help="'host' (default: this CPU), 'llvm -mcpu=... -num-cores=N' or JSON",
        )

    def model_argument(p: argparse.ArgumentParser) -> None:
        p.add_argument("model", help="zoo name, or a .onnx / .json[.gz] Relax / .pt2 file")

    def rpc_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--rpc",
            default=None,
            metavar="HOST:PORT:KEY",
            help="time on a device registered with a TVM RPC tracker",
        )

    def dataset_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--dataset",
            type=Path,
            default=paths.transfer(),
            help=f"transfer-benefit dataset dir (default {paths.transfer()})",
        )

    command("zoo", cmd_zoo, "list the shipped networks and their inputs")

    p = command("tasks", cmd_tasks, "list a network's tuning tasks with kernel class and FLOPs")
    model_argument(p)
    target_options(p)

    p = command("collect", cmd_collect, "tune networks with MetaSchedule into resumable logs")
    p.add_argument("models", nargs="+", help="zoo names or model files")
    target_options(p)
    p.add_argument(
        "--trials-per-task",
        type=int,
        default=64,
        help="budget: average trials per task (default 64)",
    )
    p.add_argument(
        "--minutes", type=float, default=None, help="wall-clock budget of this call, per network"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"parent of the per-network log dirs (default {paths.logs()})",
    )
    p.add_argument("--trials-per-iter", type=int, default=32, help="candidates per batch")
    rpc_option(p)
    p.add_argument(
        "--population",
        type=int,
        default=512,
        help="evolutionary search population (MetaSchedule's default 512)",
    )

    p = command(
        "transfer-tune",
        cmd_transfer_tune,
        "the paper's transfer-tuning: time every same-class schedule of the sources",
    )
    model_argument(p)
    p.add_argument(
        "--sources",
        default="paper",
        help="'paper' (the paper's pair), 'all' (every other logged model) or a,b,c",
    )
    p.add_argument(
        "--top-n",
        type=int,
        default=1,
        help="records per source workload to try (default 1: its best)",
    )
    p.add_argument("--out", type=Path, required=True, help="output directory")
    target_options(p)
    rpc_option(p)

    p = command(
        "dataset",
        cmd_dataset_build,
        "build (or resume) the transfer-benefit dataset: every same-class "
        "(source record, kernel) pair of the logged networks, measured",
    )
    p.add_argument("action", choices=["build"])
    p.add_argument("networks", nargs="*", help="zoo networks (default: every logged one)")
    p.add_argument("--out", type=Path, default=paths.transfer(), help="dataset dir (resumable)")
    p.add_argument("--top-n", type=int, default=3, help="records per source workload")
    target_options(p)
    rpc_option(p)

    p = command(
        "recommend",
        cmd_recommend,
        "rank every transferable schedule with the cost model, time the most promising, "
        "and compile the network with the best valid one per kernel",
    )
    model_argument(p)
    limit = p.add_mutually_exclusive_group()
    limit.add_argument(
        "--top-k",
        type=int,
        default=None,
        help="time the K best-ranked candidates per kernel; 0 = time nothing (server default 3)",
    )
    limit.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="global budget of candidate timing; applying and ranking the candidates and "
        "checking the chosen ones come on top (35 s for ResNet-18 on 2 cores; edge default 60)",
    )
    limit.add_argument("--trials", type=int, default=None, help="global budget in timed candidates")
    p.add_argument(
        "--sources",
        default="all",
        help="source logs: 'all' (every other logged model, default), 'paper' or a,b,c",
    )
    p.add_argument(
        "--top-n",
        type=int,
        default=None,
        help="records per source workload to rank (server default 3, edge 1)",
    )
    profile_option(p)
    p.add_argument(
        "--then-tune",
        type=int,
        default=0,
        metavar="TRIALS",
        help="then tune on with MetaSchedule for TRIALS trials, starting from the recommendation",
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help=f"cost model directory (default {paths.default_model()})",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="apply and featurise every candidate again (default: reuse the feature cache in "
        "$RECOMMENDER_CACHE or ~/.cache/tvm-recommender)",
    )
    p.add_argument("--out", type=Path, required=True, help="output directory")
    target_options(p)
    rpc_option(p)

    p = command(
        "train", cmd_train, "train the cost model (ranker + failure classifier) on a dataset"
    )
    p.add_argument("networks", nargs="*", help="train on these networks' kernels only")
    dataset_option(p)
    p.add_argument("--out", type=Path, default=paths.default_model(), help="model directory")
    p.add_argument(
        "--objective",
        choices=["rank:pairwise", "rank:ndcg"],
        help="XGBoost ranking objective (default rank:ndcg, which led the "
        "leave-one-model-out evaluation at k >= 2)",
    )

    p = command(
        "evaluate-model",
        cmd_evaluate_model,
        "leave-one-model-out evaluation of every learner and baseline on a dataset",
    )
    dataset_option(p)
    p.add_argument("--plot", type=Path, default=None, help="write the score-vs-k plot (PNG)")

    p = command(
        "evaluate",
        cmd_evaluate,
        "the paper's evaluation, leave-one-model-out: every method against MetaSchedule's log, "
        "per network (resumable: finished parts are read back)",
    )
    p.add_argument("networks", nargs="*", help="zoo networks (default: all, or 2 with --quick)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="2 networks, 3 methods, a 5-point MetaSchedule curve, time to match read off the "
        "curve (an upper bound) instead of bisected",
    )
    p.add_argument("--methods", default=None, help="comma-separated subset of the methods")
    p.add_argument(
        "--grid", type=int, default=None, help="points of MetaSchedule's curve (default 8)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results directory (default: out/evaluate, with _edge and _quick as chosen)",
    )
    p.add_argument(
        "--page",
        type=Path,
        nargs="?",
        const=True,
        default=None,
        help="write the results page (Markdown); without a path: docs/results.md, with _edge and "
        "_quick as chosen",
    )
    dataset_option(p)  # held-out models train on it; exhaustive runs add their measurements
    profile_option(p)
    target_options(p)
    rpc_option(p)

    p = command(
        "compare",
        cmd_compare,
        "the paper's table for one network: transfer-tuning vs MetaSchedule's log",
    )
    model_argument(p)
    p.add_argument(
        "--transfer",
        type=Path,
        required=True,
        help="output directory of transfer-tune for this model",
    )
    p.add_argument(
        "--log",
        type=Path,
        default=None,
        help=f"the model's own tuning log (default {paths.logs()}/MODEL)",
    )
    target_options(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        with ctrl_c_stops_gently():
            return args.func(args)
    except RecommenderError as err:
        print(f"recommender: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("recommender: interrupted; measured records are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
