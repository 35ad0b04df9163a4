"""Continue corpus logs into the evaluation's deeper MetaSchedule reference.

    python scripts/tune_deep_reference.py [NETWORK ...] [--factor 4] [--corpus NAME]

Each network's log (default: ResNet-18, MobileNetV2 and BERT: a residual CNN, a depthwise one
and a transformer) is copied to the corpus's ``datasets/logs_deep/`` and resumed to ``factor``
times its trials per task with ``recommender collect`` (``evaluate.deep_reference``); rerun after
an interruption and it goes on. ``recommender evaluate`` then also compares every method with
it. Run it alone on the machine: it times candidates.
"""

from __future__ import annotations

import argparse
import sys

from recommender.cli.main import main as cli
from recommender.core import corpora, paths
from recommender.core.errors import RecommenderError
from recommender.core.targets import parse_target
from recommender.evaluate import deep_reference
from recommender.logs.tuning_log import TuningLog

NETWORKS = ("resnet18", "mobilenetv2", "bert")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("networks", nargs="*", default=list(NETWORKS))
    parser.add_argument("--factor", type=int, default=deep_reference.FACTOR)
    parser.add_argument("--corpus", default=None, help="NAME (under corpora/) or PATH")
    args = parser.parse_args()
    if args.factor < 2:
        parser.error(f"--factor must be 2 or more, not {args.factor}")
    choice = corpora.choose(parse_target(None), args.corpus, writing=True)
    paths.use_corpus(choice.corpus.root)
    for name in args.networks:
        try:
            per_task = TuningLog.open(paths.logs() / name).provenance()["budget"]["trials_per_task"]
            deep = deep_reference.start(name, per_task)
        except RecommenderError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"{name}: {per_task} -> {per_task * args.factor} trials per task in {deep}")
        status = cli(
            ["collect", name, "--trials-per-task", str(per_task * args.factor)]
            + ["--out", str(deep.parent), "--corpus", str(choice.corpus.root)]
        )
        if status:
            return status  # interrupted: the next run resumes here
    return 0


if __name__ == "__main__":
    sys.exit(main())
