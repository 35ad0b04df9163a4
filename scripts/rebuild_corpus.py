"""Build this CPU's corpus: tuning logs, transfer-benefit dataset, cost model.

    python scripts/rebuild_corpus.py [NETWORK...] [--trials-per-task 64] [--target T] [--rpc H:P:K]
        [--layout native|NCHW16c] [--fast-math] [--corpus NAME] [--training-targets]

For another machine or target (an edge board through RPC: ``--rpc HOST:PORT:KEY`` with a
``--target`` for the board). It is written to ``corpora/<the target's CPU>/`` (or
``$RECOMMENDER_HOME``, or ``--corpus``). ``--layout NCHW16c`` and ``--fast-math`` make a corpus
whose networks' convolutions are tuned blocked by 16 channels and whose ``exp``/``erf``/``tanh``
are polynomials (``core.configuration``); a corpus keeps its configuration.
``--training-targets`` then also measures the dataset's 23 networks without a log
(``learn.target_networks.TRAINING_TARGETS``; needs the ``zoo`` extra) and trains again: the model
trained on the tuned networks alone serves meanwhile (hours of timing separate the two).
Every step resumes: rerun the same command after an interruption
and finished work is kept. The dataset's measurements of the zoo networks are the pools the
evaluation's exhaustive runs time: ``recommender evaluate`` reads them instead of timing again.
Before each network it prints how much collection is left and an estimate of the time, from the
seconds per trial seen so far in the logs. Run it alone on the machine: timings taken while
another CPU-heavy job runs are wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
from pathlib import Path

from recommender.cli.common import configuration_options
from recommender.cli.main import main as cli
from recommender.core import configuration, corpora, paths
from recommender.core.targets import parse_target
from recommender.learn.dataset import training_targets
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import load_zoo_network, zoo_names
from recommender.tasks.extract import extract_tasks

DEFAULT_S_PER_TRIAL = 2.0  # before any log exists; this machine measured 1.6-2.8


def seconds_per_trial() -> float:
    """Wall seconds per trial over every finished collection session in the logs."""
    wall = trials = 0.0
    for provenance in paths.logs().glob("*/provenance.json"):
        for session in json.loads(provenance.read_text()).get("sessions", []):
            wall += session.get("wall_s", 0.0)
            trials += session.get("trials", 0)
    return wall / trials if trials else DEFAULT_S_PER_TRIAL


def trials_left(networks: list[str], per_task: int, target) -> dict[str, int]:
    left = {}
    for name in networks:
        budget = per_task * len(extract_tasks(load_zoo_network(name), target))
        left[name] = TuningLog(paths.logs() / name).trials_left(budget)
    return left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("networks", nargs="*", default=None, help="default: the whole zoo")
    parser.add_argument("--trials-per-task", type=int, default=64)
    parser.add_argument("--target", default=None)
    parser.add_argument("--rpc", default=None, metavar="HOST:PORT:KEY")
    configuration_options(parser)
    parser.add_argument(
        "--training-targets",
        action="store_true",
        help="also measure the 23 networks without a log as dataset targets (the zoo extra)",
    )
    parser.add_argument(
        "--corpus", default=None, help="NAME (under corpora/) or PATH; default: corpora/<cpu>/"
    )
    args = parser.parse_args()
    networks = args.networks or zoo_names()
    target = parse_target(args.target)
    choice = corpora.choose(target, args.corpus, writing=True)
    configuration.configure(choice.corpus.root, layout=args.layout, fast_math=args.fast_math)
    paths.use_corpus(choice.corpus.root)
    print(f"configuration: {paths.configuration()}")
    print(f"corpus: {choice.corpus.root}")
    common = (
        ["--corpus", str(choice.corpus.root)]
        + (["--target", args.target] if args.target else [])
        + (["--rpc", args.rpc] if args.rpc else [])
    )

    left = trials_left(networks, args.trials_per_task, target)
    for i, name in enumerate(networks, start=1):
        remaining = sum(left[n] for n in networks[i - 1 :])
        eta = datetime.timedelta(seconds=round(remaining * seconds_per_trial()))
        print(f"[{i}/{len(networks)}] {name}: {left[name]} trials left; corpus: {eta} to go")
        if left[name]:
            status = cli(["collect", name, "--trials-per-task", str(args.trials_per_task), *common])
            if status:
                return status  # interrupted: the next run resumes here
    corpus = ["--corpus", str(choice.corpus.root)]
    trained_before_targets = bool(training_targets(paths.transfer()))  # a resumed second part
    print("transfer-benefit dataset of the tuned networks (resumable) ...")
    status = cli(["dataset", "build", *networks, *common])
    if not status and not trained_before_targets:
        status = train(corpus)
    if status or not args.training_targets:
        return status
    print("transfer-benefit dataset of the training targets (resumable) ...")
    return cli(["dataset", "build", *networks, "--training-targets", *common]) or train(corpus)


def pool_with(root: Path) -> list[str]:
    """``--pool-with`` the datasets of other CPUs' corpora in the configuration of the corpus at
    ``root`` (read now: a new corpus has its logs and configuration by the time it trains):
    trained on together, the model ranked better than each CPU's own
    (docs/results/cross_cpu_models.json), and another CPU's model of the same configuration
    ranked this one's logs well (docs/results/cross_cpu_znver4_resnet18.json)."""
    corpus = corpora.Corpus.read(root)
    if corpus is None:
        return []
    siblings = [
        c.root / "datasets" / "transfer"
        for c in corpora.find_corpora()
        if c.cpu != corpus.cpu
        and c.arch == corpus.arch
        and c.configuration == corpus.configuration
        and c.dataset_files
    ]
    for dataset in siblings:
        print(f"the cost model also trains on {dataset}")
    return [arg for d in siblings for arg in ("--pool-with", str(d))]


def train(corpus: list[str]) -> int:
    """Fit the corpus's cost model (pooled with its configuration's other datasets) and evaluate
    it leave-one-model-out: the table and the plot beside the model (``evaluation.json``,
    ``score_vs_k.png``)."""
    print("default cost model ...")
    corpus = [*corpus, *pool_with(paths.root())]
    if status := cli(["train", *corpus]):
        return status
    model = paths.default_model()
    with open(model / "evaluation.json", "w") as out, contextlib.redirect_stdout(out):
        status = cli(["evaluate-model", *corpus, "--json", "--plot", str(model / "score_vs_k.png")])
    print(f"leave-one-model-out evaluation: {model / 'evaluation.json'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
