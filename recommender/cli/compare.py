"""``recommender compare``: the paper's table for one network, transfer-tuning vs MetaSchedule."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core import paths
from .common import (
    add_command,
    format_table,
    model_argument,
    network_kwargs,
    print_json,
    target_options,
)

HEADER = [
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
]


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
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
        help="the model's own tuning log (default: the corpus's datasets/logs/MODEL)",
    )
    target_options(p)


def cmd_compare(args) -> int:
    from ..core.targets import parse_target
    from ..evaluate.workflows import compare_with_metaschedule
    from ..networks.frontends import load_network

    target = parse_target(args.target)
    network = load_network(args.model, **network_kwargs(args))
    log = args.log or paths.logs() / network.name
    row = compare_with_metaschedule(network, target, args.transfer, log)
    if args.json:
        print_json(row)
        return 0
    print(format_table([_cells(row)], HEADER))
    budget = row["metaschedule_budget"].get("trials_per_task", "?")
    print(f"MetaSchedule: {budget} trials/task, {row['metaschedule_tuning_s']:.0f} s of tuning")
    print(f"note: {row['note']}")
    return 0


def _cells(row: dict) -> list[str]:
    """One table row of ``compare_with_metaschedule``'s result."""
    e2e = row["end_to_end_ms"]
    match = row["metaschedule_time_to_match_s"]
    share = row["share_of_max_speedup"]
    return [
        row["network"],
        f"{e2e['untuned']:.3f}",
        f"{e2e['transfer']:.3f}",
        f"{e2e['metaschedule']:.3f}",
        f"{e2e['metaschedule_same_time']:.3f}",
        f"{row['speedup']:.2f}",
        f"{row['max_speedup']:.2f}",
        "-" if share is None else f"{100 * share:.1f}%",
        f"{row['search_s']:.0f}",
        "never" if match is None else f"{match:.0f}",
        "-" if match is None else f"{row['time_to_match_over_search']:.1f}x",
    ]
