"""``recommender collect``: tune networks with MetaSchedule into resumable logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core import paths
from .common import (
    add_command,
    configuration_options,
    format_table,
    network_kwargs,
    network_options,
    positive_float,
    positive_int,
    print_json,
    rpc_option,
    target_options,
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "collect", cmd_collect, "tune networks with MetaSchedule into resumable logs"
    )
    p.add_argument("models", nargs="+", help="zoo names, hf:NAME, tv:NAME or model files")
    network_options(p)
    target_options(p)
    p.add_argument(
        "--trials-per-task",
        type=positive_int,
        default=64,
        help="budget: average trials per task (default 64)",
    )
    p.add_argument(
        "--minutes",
        type=positive_float,
        default=None,
        help="wall-clock budget of this call, per network",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="parent of the per-network log dirs (default: the corpus's datasets/logs)",
    )
    configuration_options(p)
    p.add_argument("--trials-per-iter", type=positive_int, default=32, help="candidates per batch")
    rpc_option(p)
    p.add_argument(
        "--population",
        type=positive_int,
        default=512,
        help="evolutionary search population (MetaSchedule's default 512)",
    )


def cmd_collect(args) -> int:
    from ..core.targets import RemoteDevice, parse_target
    from ..logs.collect import collect
    from ..networks.frontends import load_network

    target = parse_target(args.target)
    remote = RemoteDevice.parse(args.rpc) if args.rpc else None
    summaries = []
    for spec in args.models:
        network = load_network(spec, **network_kwargs(args))
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
            _print_summary(summary)
        if summary.status == "interrupted":
            break
    if args.json:
        print_json([s.to_json() for s in summaries])
    return 130 if summaries and summaries[-1].status == "interrupted" else 0


def _print_summary(summary) -> None:
    print(
        f"{summary.network}: {summary.status}; {summary.trials_this_run} trials "
        f"({summary.failures_this_run} failed) in {summary.wall_s:.0f} s, "
        f"{summary.trials_before + summary.trials_this_run}/{summary.budget_trials} "
        f"in {summary.work_dir}"
    )
    rows = [[task, f"{s * 1e3:.4f}"] for task, s in sorted(summary.best_s.items())]
    print(format_table(rows, ["task", "best ms"]))
