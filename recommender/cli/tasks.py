"""``recommender tasks``: a network's tuning tasks with kernel classes (exact and anchor) and
FLOPs."""

from __future__ import annotations

import argparse

from .common import (
    add_command,
    format_table,
    model_argument,
    network_kwargs,
    print_json,
    target_options,
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "tasks", cmd_tasks, "list a network's tuning tasks with kernel class and FLOPs"
    )
    model_argument(p)
    target_options(p)


def cmd_tasks(args) -> int:
    from ..core.targets import parse_target
    from ..networks.frontends import load_network
    from ..tasks.extract import extract_tasks

    target = parse_target(args.target)
    network = load_network(args.model, **network_kwargs(args))
    tasks = extract_tasks(network, target)
    if args.json:
        every = [{**t.to_json(), "anchor_class": t.kernel_class.anchor} for t in tasks]
        print_json({"model": network.name, "target": str(target), "tasks": every})
        return 0
    rows = [
        [
            t.name,
            t.kernel_class.key,
            t.kernel_class.anchor or "-",
            t.weight,
            f"{t.descriptor.flops / 1e6:.1f}",
        ]
        for t in tasks
    ]
    print(
        f"{network.name}: {len(tasks)} tasks, "
        f"{len({t.kernel_class.key for t in tasks})} kernel classes, target {target}"
    )
    print(format_table(rows, ["task", "kernel class", "anchor class", "weight", "MFLOP"]))
    return 0
