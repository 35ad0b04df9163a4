"""Tune the zoo's heaviest kernels on this CPU into a log of their own: a schedule variant for
``scripts/bench_kernels.py --database NAME=DIR`` to set beside the corpora's records.

    .venv/bin/python scripts/tune_kernels.py NAME [--top 8] [--trials-per-task 64] [--minutes M]
        [--space default|tile16|jobs4|vector16|unroll-deep] [--prepack] [--corpus NAME]

The kernels are those ``bench_kernels.py`` takes, heaviest first (the corpus chosen for this
CPU decides, in its configuration), each tuned alone with equal weight, in MetaSchedule's
default search space or a variant of its CPU settings (``recommender.logs.search_space``), on
the target's cores (``TVM_NUM_THREADS`` = its ``num-cores``). ``--prepack``: each kernel as TVM's
weight-prepacking pipeline extracts it (its weights ``layout_free_buffers``: MetaSchedule's
``RewriteLayout`` gives them the layout the schedule reads best, rewritten once at load time in
a built network); such a log's workloads carry the mark, so they never match the plain kernels
of a corpus. Writes
``datasets/kernel_variants/<cpu>/NAME/``, a tuning log like a corpus's (provenance with the
space, stamps); stopped and run again, it continues.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from recommender.core import corpora, paths
from recommender.core.corpora import CHECKOUT
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate.kernel_bench import heavy_workloads
from recommender.logs import search_space
from recommender.logs.collect import collect_tasks
from recommender.logs.sources import logged_models


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the variant's name, e.g. retuned-64")
    parser.add_argument("--top", type=int, default=8, help="the N heaviest kernels")
    parser.add_argument("--trials-per-task", type=int, default=64)
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long")
    parser.add_argument(
        "--space",
        default=search_space.DEFAULT,
        choices=search_space.names(),
        help="the search space: MetaSchedule's default or one variant of its CPU settings",
    )
    parser.add_argument(
        "--prepack", action="store_true", help="weights layout-free, as cpu_weight_prepack marks"
    )
    parser.add_argument("--corpus", default=None, help="whose heavy kernels (default: the host's)")
    args = parser.parse_args()
    target = host_target()
    threads = use_target_threads(target)
    corpus = corpora.choose(target, explicit=args.corpus).corpus
    paths.use_corpus(corpus.root)  # its configuration prepares the networks
    logs = corpus.logs
    every = {m: logs / m for m in logged_models(logs)}
    heavy, _ = heavy_workloads(every, target, share=1.0, layout_free=args.prepack)
    tasks = [
        dataclasses.replace(
            h.prepacked if args.prepack else h.task,
            name=h.occurs[0].split(" ")[0].replace("/", "."),
            weight=1,
        )
        for h in heavy[: args.top]
    ]
    out = CHECKOUT / "datasets" / "kernel_variants" / str(target.attrs["mcpu"]) / args.name
    print(
        f"tuning {len(tasks)} kernels on {threads} threads in search space {args.space!r} "
        f"into {out}",
        file=sys.stderr,
    )
    summary = collect_tasks(
        args.name,
        tasks,
        target,
        out,
        trials_per_task=args.trials_per_task,
        minutes=args.minutes,
        configuration=corpus.configuration,
        space=args.space,
    )
    print(f"{summary.status}: {summary.trials_before + summary.trials_this_run} trials in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
