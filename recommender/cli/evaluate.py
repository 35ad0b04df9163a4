"""``recommender evaluate``: the paper's evaluation, leave-one-model-out, against MetaSchedule."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..core import paths
from ..core.errors import InputError
from .common import (
    add_command,
    dataset_option,
    format_table,
    pool_with_option,
    positive_int,
    print_json,
    profile_option,
    rpc_option,
    target_options,
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
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
        "--grid", type=positive_int, default=None, help="points of MetaSchedule's curve (default 8)"
    )
    p.add_argument(
        "--recompare",
        action="store_true",
        help="compare the named networks again even where no search changed: the page then "
        "shows how far their unchanged builds moved (a noisy comparison is retaken this way)",
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
    p.add_argument(
        "--from-results",
        type=Path,
        default=None,
        metavar="JSON",
        help="write the page (--page) from this results JSON (an earlier run's results.json or "
        "evaluate.json) with today's metrics, and run nothing: works on any CPU",
    )
    dataset_option(p)  # held-out models train on it; exhaustive runs add their measurements
    pool_with_option(p)  # the held-out models train on these too (without the network)
    profile_option(p)
    target_options(p)
    rpc_option(p)


def cmd_evaluate(args) -> int:
    from ..core.targets import RemoteDevice
    from ..evaluate.benchmark import evaluate
    from ..evaluate.methods import QUICK_GRID
    from ..evaluate.results_page import write_page
    from ..recommend.profiles import PROFILES

    if args.from_results is not None:
        return _page_from_results(args)
    networks, methods = _networks_and_methods(args)
    profile = PROFILES[args.profile]
    target, _, _ = profile.settings(args.target, None, None)
    os.environ.update(profile.environment(target))
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
        + [f"--pool-with {d}" for d in args.pool_with]
    )
    results = evaluate(
        networks,
        methods,
        out,
        target,
        dataset_dir=args.dataset,
        pool_with=tuple(args.pool_with),
        grid_points=args.grid or (QUICK_GRID if args.quick else 8),
        refine=not args.quick,
        remote=remote,
        progress=not args.json,
        on_results=(lambda results: write_page(results, page, command)) if page else None,
        recompare=args.recompare,
    )
    if args.json:
        print_json(results)
        return 0
    _print_means(results)
    print(f"every number in {out / 'results.json'}" + (f"; page {page}" if page else ""))
    return 0


def _page_from_results(args) -> int:
    """The page rewritten from an earlier run's JSON: no target, corpus or timing needed."""
    from ..evaluate.results_page import upgrade, write_page
    from ..evaluate.searches import read_json

    if args.page is None or args.page is True:
        raise InputError("--from-results needs the page to write: --page PATH")
    results = read_json(args.from_results)
    if results is None or "networks" not in results:
        raise InputError("not an evaluation's results JSON", path=args.from_results)
    command = f"recommender evaluate --page {args.page} --from-results {args.from_results}"
    write_page(results, args.page, command)
    _print_means(upgrade(results))
    print(f"page {args.page}")
    return 0


def _print_means(results: dict) -> None:
    rows = [
        [
            name,
            m.get("networks", 0),
            m.get("latency_ratio_geomean"),
            m.get("latency_ratio_worst"),
            m.get("share_of_max_speedup"),
            m.get("share_of_max_speedup_uncapped"),
            m.get("search_s"),
            m.get("time_to_match_over_search"),
            m.get("time_to_match_over_search_matched"),
        ]
        for name, m in results["means"].items()
    ]
    header = [
        "method",
        "networks",
        "t_ms/t geomean",
        "worst",
        "share (capped)",
        "uncapped",
        "search s",
        "ttm/search",
        "matched only",
    ]
    print(format_table(rows, header))


def _networks_and_methods(args) -> tuple[list[str], list[str]]:
    """The networks and methods asked for, checked before any run: a typo stops here, not
    after the other networks' runs."""
    from ..evaluate.methods import METHODS, QUICK_METHODS, QUICK_NETWORKS
    from ..networks.zoo import zoo_entry, zoo_names

    networks = args.networks or list(QUICK_NETWORKS if args.quick else zoo_names())
    for name in networks:
        zoo_entry(name)
    methods = (
        args.methods.split(",") if args.methods else list(QUICK_METHODS if args.quick else METHODS)
    )
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InputError(f"unknown method {unknown[0]!r}; known: {', '.join(METHODS)}")
    return networks, methods
