"""``recommender corpora``: the corpora here, one per CPU, and the one this host would use."""

from __future__ import annotations

import argparse

from .common import add_command, format_table, print_json, target_options


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "corpora", cmd_corpora, "the corpora (logs, dataset, model per CPU) and the choice"
    )
    target_options(p)


def cmd_corpora(args) -> int:
    from ..core import corpora
    from ..core.targets import parse_target

    target = parse_target(args.target)
    found = corpora.find_corpora()
    choice = corpora.choose(target, explicit=args.corpus) if found or args.corpus else None
    cpu = str(target.attrs.get("mcpu", ""))
    if args.json:
        print_json(
            {
                "target_cpu": cpu,
                "corpora": [
                    {**c.to_json(), "closeness": round(corpora.closeness(cpu, c.cpu), 3)}
                    for c in found
                ],
                "chosen": choice.corpus.name if choice else None,
                "why": choice.why if choice else "no corpus",
                "model": str(choice.model) if choice else None,
            }
        )
        return 0
    rows = [
        [
            c.name,
            c.cpu,
            c.arch,
            f"{corpora.closeness(cpu, c.cpu):.0%}",
            len(c.networks),
            c.trials_per_task,
            c.dataset_files,
            "yes" if c.has_model else "no",
            str(c.configuration),
        ]
        for c in found
    ]
    header = ["corpus", "cpu", "arch", "features shared", "networks", "trials/task"]
    print(format_table(rows, [*header, "dataset files", "model", "configuration"]))
    if choice:
        print(f"this target ({cpu}) uses {choice.corpus.name}: {choice.why}")
        print(f"its cost model: {choice.model}")
    return 0
