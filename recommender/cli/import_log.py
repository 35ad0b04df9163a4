"""``recommender import-log``: a MetaSchedule work dir tuned elsewhere, as a source log."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .common import add_command, configuration_options, print_json, target_options

RESERVED = ("all", "paper")  # words of ``--sources``


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "import-log",
        cmd_import_log,
        "add a MetaSchedule JSON database tuned elsewhere to the corpus of its CPU, as a source",
    )
    p.add_argument(
        "work_dir",
        type=Path,
        help="MetaSchedule work dir: database_workload.json and database_tuning_record.json",
    )
    p.add_argument(
        "--name",
        type=log_name,
        default=None,
        help="the log's name in the corpus (default: the work dir's name)",
    )
    target_options(p)
    configuration_options(p)


def log_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", text) or text in RESERVED:
        raise argparse.ArgumentTypeError(
            f"a log name is letters, digits, '_', '.' and '-', not {' or '.join(RESERVED)}. "
            f"Got {text!r} instead."
        )
    return text


def cmd_import_log(args) -> int:
    """The corpus is the one of the CPU the log was tuned for (``corpora.choose`` for writing),
    so it is chosen here, once the log's target is read."""
    from ..core import configuration, corpora
    from ..core.errors import InputError
    from ..core.targets import parse_target
    from ..logs.imported import import_log, read_foreign_log
    from ..networks.zoo import zoo_index

    name = args.name or log_name(args.work_dir.resolve().name)
    if name in zoo_index():
        raise InputError(
            f"{name!r} is a zoo network: its log is the evaluation's MetaSchedule reference, "
            "made by `recommender collect`; import yours under another name (--name)"
        )
    given = parse_target(args.target) if args.target else None
    log = read_foreign_log(args.work_dir, given)
    choice = corpora.choose(log.target, explicit=args.corpus, writing=True)
    print(f"corpus: {choice.corpus.name} ({choice.why})", file=sys.stderr)
    configuration.configure(choice.corpus.root, layout=args.layout, fast_math=args.fast_math)
    config = configuration.read(choice.corpus.root)
    imported = import_log(log, choice.corpus.logs / name, config, progress=not args.json)
    result = {
        "log": str(imported.path),
        "corpus": choice.corpus.name,
        "configuration": config.to_json(),
        "target": str(log.target),
        "workloads": imported.workloads,
        "records": imported.records,
        "dropped_records": imported.dropped,
    }
    if args.json:
        print_json(result)
        return 0
    dropped = f", {imported.dropped} dropped (TVM cannot parse their traces)"
    print(
        f"{name}: {imported.workloads} workloads, {imported.records} records"
        f"{dropped if imported.dropped else ''} -> {imported.path}\n"
        f"a source of `recommender recommend MODEL --sources all` (or --sources {name}) "
        f"on {log.target.attrs.get('mcpu') or 'its CPU'} and the CPUs closest to it"
    )
    return 0
