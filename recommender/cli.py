"""The ``recommender`` command: a thin layer over the library; ``--json`` for scripts."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from . import paths
from .errors import RecommenderError


def _print_json(data) -> None:
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")


def _table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cmd_zoo(args) -> int:
    from .zoo import zoo_index

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
    from .frontends import load_network
    from .targets import parse_target
    from .tasks import extract_tasks

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
    from .collect import collect
    from .frontends import load_network
    from .targets import RemoteDevice, parse_target

    target = parse_target(args.target)
    remote = RemoteDevice.parse(args.rpc) if args.rpc else None
    summaries = []
    for spec in args.models:
        network = load_network(spec)
        work_dir = paths.LOGS / network.name if args.out is None else args.out / network.name
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

    def target_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--target",
            default=None,
            help="'host' (default: this CPU), 'llvm -mcpu=... -num-cores=N' or JSON",
        )

    command("zoo", cmd_zoo, "list the shipped networks and their inputs")

    p = command("tasks", cmd_tasks, "list a network's tuning tasks with kernel class and FLOPs")
    p.add_argument("model", help="zoo name, or a .onnx / .json[.gz] Relax / .pt2 file")
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
        "--rpc",
        default=None,
        metavar="HOST:PORT:KEY",
        help="time on a device registered with a TVM RPC tracker",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"parent of the per-network log dirs (default {paths.LOGS})",
    )
    p.add_argument("--trials-per-iter", type=int, default=32, help="candidates per batch")
    p.add_argument(
        "--population",
        type=int,
        default=512,
        help="evolutionary search population (MetaSchedule's default 512)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.func(args)
    except RecommenderError as err:
        print(f"recommender: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("recommender: interrupted; measured records are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
