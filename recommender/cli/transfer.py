"""``recommender transfer-tune``: the paper's transfer-tuning, every same-class schedule timed."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import (
    add_command,
    model_argument,
    network_kwargs,
    positive_int,
    print_json,
    rpc_option,
    target_options,
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
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
        type=positive_int,
        default=1,
        help="records per source workload to try (default 1: its best)",
    )
    p.add_argument(
        "--exact-only",
        action="store_true",
        help="the paper's algorithm as published: same exact kernel class only, no "
        "anchor-level candidates (default: both levels)",
    )
    p.add_argument("--out", type=Path, required=True, help="output directory")
    target_options(p)
    rpc_option(p)


def cmd_transfer_tune(args) -> int:
    from ..core.targets import RemoteDevice, parse_target
    from ..evaluate.workflows import transfer_tune_to_dir
    from ..logs.sources import log_dir, resolve_sources
    from ..networks.frontends import load_network
    from ..transfer.apply import Level
    from ..transfer.candidate import LEVELS
    from ..transfer.report import table

    target = parse_target(args.target)
    network = load_network(args.model, **network_kwargs(args))
    report = transfer_tune_to_dir(
        network,
        target,
        {m: log_dir(m) for m in resolve_sources(args.sources, network.name)},
        args.out,
        top_n=args.top_n,
        remote=RemoteDevice.parse(args.rpc) if args.rpc else None,
        progress=not args.json,
        levels=(Level.EXACT,) if args.exact_only else LEVELS,
    )
    if args.json:
        print_json(report)
    else:
        print(table(report))
        print(f"database, library and report.json in {args.out}")
    return 0
