"""``recommender recommend``: rank transferable schedules, time the most promising, compile."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .common import (
    add_command,
    model_argument,
    network_kwargs,
    non_negative_int,
    positive_float,
    positive_int,
    print_json,
    profile_option,
    rpc_option,
    target_options,
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "recommend",
        cmd_recommend,
        "rank every transferable schedule with the cost model, time the most promising, "
        "and compile the network with the best valid one per kernel",
    )
    model_argument(p)
    _budget_options(p)
    p.add_argument(
        "--sources",
        default="all",
        help="source logs: 'all' (every other logged model, default), 'paper' or a,b,c",
    )
    p.add_argument(
        "--top-n",
        type=positive_int,
        default=None,
        help="records per source workload to rank (server default 3, edge 1)",
    )
    profile_option(p)
    p.add_argument(
        "--then-tune",
        type=positive_int,
        default=0,
        metavar="TRIALS",
        help="then tune on with MetaSchedule for TRIALS trials, starting from the recommendation",
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help="cost model directory (default: the corpus's models/default)",
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


def _budget_options(p: argparse.ArgumentParser) -> None:
    """``--top-k``, ``--budget`` and ``--trials``: one limit of the timing, or the profile's."""
    limit = p.add_mutually_exclusive_group()
    limit.add_argument(
        "--top-k",
        type=non_negative_int,
        default=None,
        help="time the K best-ranked candidates per kernel; 0 = time nothing (server default 3)",
    )
    limit.add_argument(
        "--budget",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="global budget of candidate timing; applying and ranking the candidates and "
        "checking the chosen ones come on top (35 s for ResNet-18 on 2 cores; edge default 60)",
    )
    limit.add_argument(
        "--trials", type=positive_int, default=None, help="global budget in timed candidates"
    )


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
    profile = PROFILES[args.profile]
    target, budget, top_n = profile.settings(
        args.target, given if given.to_json() else None, args.top_n
    )
    os.environ.update(profile.environment(target))
    remote = RemoteDevice.parse(args.rpc) if args.rpc else None
    model = load_cost_model(args.model_dir, target)
    network = load_network(args.model, **network_kwargs(args))
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
        print_json(report)
    else:
        print(recommendation_table(report))
        if "then_tune" in report:
            warm = report["then_tune"]
            print(f"then-tune: {warm['trials']} records; curves in {warm['plot']}")
            if warm["curve_missing"]:
                print(f"  no from-scratch curve beside it: {warm['curve_missing']}")
        print(f"database, library and report.json in {args.out}")
    return 0
