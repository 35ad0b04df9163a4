"""``recommender zoo``: the shipped networks and their inputs."""

from __future__ import annotations

import argparse

from .common import add_command, format_table, print_json


def add_parsers(sub: argparse._SubParsersAction) -> None:
    add_command(sub, "zoo", cmd_zoo, "list the shipped networks and their inputs")


def cmd_zoo(args) -> int:
    from ..networks.zoo import zoo_index

    entries = [entry.to_json() for entry in zoo_index().values()]
    if args.json:
        print_json(entries)
        return 0
    rows = [
        [
            e["name"],
            e["family"],
            ", ".join(f"{i['name']}{i['shape']} {i['dtype']}" for i in e["inputs"]),
        ]
        for e in entries
    ]
    print(format_table(rows, ["model", "family", "inputs"]))
    return 0
