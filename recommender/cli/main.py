"""The ``recommender`` command: a thin layer over the library; ``--json`` for scripts.

Each command lives in its own module (``zoo``, ``tasks``, ``collect``, ...) with the options it
declares and the ``cmd_*`` function that runs it; heavy modules (TVM, XGBoost) are imported
inside those functions, so ``--help`` and a bad option answer at once.
"""

from __future__ import annotations

import argparse
import logging
import sys

from ..core.errors import RecommenderError
from ..core.interrupts import ctrl_c_stops_gently
from ..core.tvm_import import import_tvm_without_torch
from . import (
    collect,
    compare,
    corpora,
    dataset,
    evaluate,
    import_log,
    recommend,
    tasks,
    train,
    transfer,
    zoo,
)

# in the order of the data flow, as `recommender --help` lists them
COMMANDS = (
    zoo,
    corpora,
    tasks,
    collect,
    import_log,
    transfer,
    dataset,
    recommend,
    train,
    evaluate,
    compare,
)
# commands that read no corpus, or choose their own (import-log: the corpus of its log's CPU)
OWN_CORPUS = ("zoo", "corpora", "import-log")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recommender",
        description="Reuse tuned TVM schedules across DNNs: tasks, log collection, transfer.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    import_tvm_without_torch()
    try:
        with ctrl_c_stops_gently():
            if args.command not in OWN_CORPUS:
                _use_corpus(args)
            return args.func(args)
    except RecommenderError as err:
        print(f"recommender: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("recommender: interrupted; measured records are kept", file=sys.stderr)
        return 130


def _use_corpus(args: argparse.Namespace) -> None:
    """Choose the corpus for the command's target, say which on stderr, and fill the defaults
    that live in it."""
    from ..core import configuration, corpora, paths
    from ..core.targets import parse_target, use_target_threads

    target = parse_target(getattr(args, "target", None))
    use_target_threads(target)
    writing = args.command in ("collect", "dataset")  # they measure on the corpus's CPU
    choice = corpora.choose(target, explicit=args.corpus, writing=writing)
    if hasattr(args, "layout"):
        configuration.configure(choice.corpus.root, layout=args.layout, fast_math=args.fast_math)
    model = None if args.command == "train" else choice.model  # train writes the corpus's own
    paths.use_corpus(choice.corpus.root, model)
    shown = "" if model is None or model.parent.parent == choice.corpus.root else f"; model {model}"
    print(f"corpus: {choice.corpus.name} ({choice.why}){shown}", file=sys.stderr)
    if hasattr(args, "target"):  # the others (train, evaluate-model) read the corpus as it is
        corpora.warn_if_other_cpu(choice, str(target.attrs.get("mcpu", "")))
    if getattr(args, "dataset", "") is None:
        args.dataset = paths.transfer()


if __name__ == "__main__":
    sys.exit(main())
