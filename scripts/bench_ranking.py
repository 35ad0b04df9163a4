"""How long ranking takes, from a fresh process to ranked candidates, cold and warm.

    python scripts/bench_ranking.py [MODEL] [--repeats 3] [--out JSON]

Ranking is pure computation (no kernel is built or run): it is what `recommend --top-k 0`
costs before its correctness checks and what every budgeted run pays first. Each repeat runs in
a fresh Python process, in these phases: import (TVM imported as the command line does, without
PyTorch), load the network and the cost model, read the source logs (through their shipped
index, or with the index removed: ``no_index``), extract the network's tasks, screen (the first
stage), apply, featurise and score the kept candidates (``rank``), and ``single_stage``: the
same with every candidate applied; ``one_thread``: applied and featurised on one thread
instead of one per core. The process's wall time (interpreter start included) is
reported beside. ``cold`` starts with empty task and feature caches; ``warm`` runs again on the
caches the cold run filled. Prints the medians and writes ``docs/results/ranking_speed_<cpu>.json``.
Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIOS = ("cold", "warm", "cold_no_index", "cold_single_stage", "cold_one_thread")


def measure(model: str, scenario: str) -> dict:
    """One run in this process (called in a fresh one by ``main``)."""
    start = time.perf_counter()
    from recommender.core.tvm_import import import_tvm_without_torch

    import_tvm_without_torch()  # as the command line does
    from recommender.core import paths
    from recommender.core.targets import host_target
    from recommender.evaluate.workflows import load_cost_model
    from recommender.learn.cost_models import SCREEN_KEEP
    from recommender.learn.feature_cache import FeatureCache
    from recommender.logs.sources import load_sources, log_dir, resolve_sources
    from recommender.networks.zoo import families, load_zoo_network
    from recommender.recommend.ranking import rank_candidates
    from recommender.tasks.extract import extract_tasks
    from recommender.transfer.candidate import apply_candidates

    phases = {"import": time.perf_counter() - start}
    start = time.perf_counter()
    target = host_target()
    network = load_zoo_network(model)
    phases["network"] = time.perf_counter() - start
    start = time.perf_counter()
    cost_model = load_cost_model(None, target)
    phases["model"] = time.perf_counter() - start
    start = time.perf_counter()
    names = resolve_sources("all", network.name)
    sources = load_sources({n: log_dir(n) for n in names}, target, top_n=3)
    phases["sources"] = time.perf_counter() - start
    start = time.perf_counter()
    tasks = extract_tasks(network, target)
    phases["extract"] = time.perf_counter() - start
    kernels = apply_candidates(tasks, sources, target)
    ranked = rank_candidates(
        kernels,
        cost_model,
        target,
        family_of=families(),
        target_family=network.family,
        cache=FeatureCache(),
        keep=None if scenario == "cold_single_stage" else SCREEN_KEEP,
        timings=phases,
        workers=1 if scenario == "cold_one_thread" else None,
    )
    return {
        "phases_s": {k: round(v, 2) for k, v in phases.items()},
        "total_s": round(sum(phases.values()), 2),
        "kernels": len(tasks),
        "candidates": sum(len(k.candidates) for k in kernels),
        "ranked": sum(len(r.candidates) for r in ranked),
        "sources_read": len(sources),
        "corpus": str(paths.root()),
    }


def run(model: str, scenario: str, cache: Path, corpus: Path) -> dict:
    """One scenario in a fresh process; ``process_s`` is its wall time, interpreter start
    included (what a user's command pays)."""
    env = {**os.environ, "RECOMMENDER_CACHE": str(cache), "RECOMMENDER_HOME": str(corpus)}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, model, "--measure", scenario],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        sys.exit(f"bench_ranking: scenario {scenario} failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result | {"process_s": round(time.perf_counter() - start, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="resnet50")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--measure", choices=SCENARIOS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.model, args.measure)))
        return

    from recommender.core import configuration, paths
    from recommender.core.targets import host_target

    corpus = paths.root()
    runs: dict[str, list[dict]] = {s: [] for s in SCENARIOS}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as root:
            cache = Path(root) / "cache"
            runs["cold"].append(run(args.model, "cold", cache, corpus))
            runs["warm"].append(run(args.model, "warm", cache, corpus))
            single = run(args.model, "cold_single_stage", Path(root) / "cache1", corpus)
            runs["cold_single_stage"].append(single)
            one = run(args.model, "cold_one_thread", Path(root) / "cache2", corpus)
            runs["cold_one_thread"].append(one)
            bare = Path(root) / "corpus"  # the corpus without its source index
            shutil.copytree(corpus / "models", bare / "models")
            if (corpus / configuration.FILE).exists():  # what the logs were tuned in
                shutil.copy(corpus / configuration.FILE, bare / configuration.FILE)
            shutil.copytree(
                paths.logs(),
                bare / "datasets" / "logs",
                ignore=shutil.ignore_patterns(
                    "sources.json.gz", "database_*.json", "timestamps.jsonl"
                ),
            )
            runs["cold_no_index"].append(run(args.model, "cold_no_index", cache / "2", bare))
    cpu = str(host_target().attrs.get("mcpu", "host"))
    summary = {
        "command": " ".join(
            [f"RECOMMENDER_HOME={home}" for home in [os.environ.get("RECOMMENDER_HOME")] if home]
            + ["python scripts/bench_ranking.py", args.model, f"--repeats {args.repeats}"]
        ),
        "date": datetime.date.today().isoformat(),
        "cpu": cpu,
        "network": args.model,
        "corpus": corpus.name,
        "median_total_s": {
            s: statistics.median(r["total_s"] for r in rs) for s, rs in runs.items()
        },
        "median_process_s": {
            s: statistics.median(r["process_s"] for r in rs) for s, rs in runs.items()
        },
        "median_phases_s": {
            s: {
                phase: round(statistics.median(r["phases_s"][phase] for r in rs), 2)
                for phase in rs[0]["phases_s"]
            }
            for s, rs in runs.items()
        },
        "runs": runs,
    }
    out = args.out or paths.CHECKOUT / "docs" / "results" / f"ranking_speed_{cpu}.json"
    out.write_text(json.dumps(summary, indent=1) + "\n")
    for scenario, phases in summary["median_phases_s"].items():
        total = summary["median_total_s"][scenario]
        detail = ", ".join(f"{k} {v:.1f}" for k, v in phases.items())
        process = summary["median_process_s"][scenario]
        print(f"{scenario:18s} {total:6.1f} s, process {process:5.1f} s  ({detail})")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
