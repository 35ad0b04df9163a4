"""How often two timings of the same candidates agree on a kernel's fastest: the ceiling the
timing noise puts on recall@1.

    python scripts/bench_timing_noise.py [NETWORK...] [--corpus NAME] [--within 0.10]
                                         [--kernels 6] [--out JSON]

recall@1 asks a ranker's first pick to be the kernel's fastest candidate in the dataset, which
timed each candidate once. Where a kernel's pool holds several candidates within a few percent
of each other, which of them is "the fastest" is partly the noise of that one timing. For the
``--kernels`` heaviest kernels of each network (by tuned time, among those with at least two
candidates within ``--within`` of the fastest), this re-applies those near-best candidates from
the corpus logs and times them twice more with the dataset's protocol, the second time in
reverse order. It reports how often the two new timings agree on the fastest (the recall@1 a
perfect predictor of one timing scores against another), how often the dataset's fastest is
the fastest of a new timing, and how far a candidate's times differ between timings; writes
``docs/results/timing_noise_<corpus>.json``. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from recommender.core import corpora, paths
from recommender.core.targets import host_target, use_target_threads
from recommender.learn.kernel_data import KernelData
from recommender.logs.sources import load_sources, log_dir, logged_models
from recommender.networks.zoo import load_zoo_network
from recommender.tasks.extract import extract_tasks
from recommender.transfer.candidate import Candidate, KernelResult, SourceIndex
from recommender.transfer.timing import measure_kernels

DEFAULT_NETWORKS = ("resnet18", "mobilenetv2", "bert", "alexnet")
TOP_N = 3  # the dataset's records per source workload
MAX_CANDIDATES = 16  # per kernel, the fastest first: bounds the time a kernel takes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("networks", nargs="*", default=list(DEFAULT_NETWORKS))
    parser.add_argument("--corpus", default=None, help="corpus name or path (default: the host's)")
    parser.add_argument("--within", type=float, default=0.10, help="near-best: within this share")
    parser.add_argument("--kernels", type=int, default=6, help="heaviest kernels per network")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    target = host_target()
    corpus = corpora.choose(target, args.corpus).corpus.root
    paths.use_corpus(corpus)
    use_target_threads(target)
    models = logged_models()
    sources = load_sources({m: log_dir(m) for m in models}, target, top_n=TOP_N)

    kernels = []
    for network in tqdm(args.networks, desc="near-best candidates", unit="network"):
        index = SourceIndex(s for s in sources if s.model != network)
        picked = []
        for position, task in enumerate(extract_tasks(load_zoo_network(network), target)):
            near = near_best(dataset_rows(network, position), args.within)
            if len(near) >= 2:
                chosen = [(s, lv) for s, lv in index.pool(task) if s.trace_key in near]
                candidates = [Candidate(s, task.mod, target, lv) for s, lv in chosen]
                picked.append((network, near, KernelResult(task, candidates)))
        picked.sort(key=lambda p: -p[2].task.weight * min(p[1].values()))  # heaviest tuned
        kernels += picked[: args.kernels]

    timings: list[list[dict[str, float]]] = []
    for order in (1, -1):  # the second timing in reverse order
        runs = [KernelResult(k.task, k.candidates[::order]) for _, _, k in kernels]
        for run in runs:
            for candidate in run.candidates:
                candidate.measurement = None
        measure_kernels(runs, target)
        timings.append(
            [{c.source.trace_key: c.run_s for c in run.candidates if c.run_s} for run in runs]
        )

    rows = [
        kernel_row(network, kernel.task.name, near, first, second)
        for (network, near, kernel), first, second in zip(kernels, *timings)
        if len(first) >= 2 and len(second) >= 2
    ]
    summary = {
        "kernels": len(rows),
        "candidates_per_kernel_median": statistics.median(r["candidates"] for r in rows),
        "two_timings_agree_on_the_fastest": mean(r["retimings_agree"] for r in rows),
        "the_datasets_fastest_is_the_fastest_again": mean(r["dataset_agrees"] for r in rows),
        "the_datasets_fastest_within_2pct_of_the_fastest_again": mean(
            r["dataset_within_2pct"] for r in rows
        ),
        "relative_difference_between_timings_median": statistics.median(
            r["relative_difference_median"] for r in rows
        ),
    }
    out = args.out or paths.CHECKOUT / "docs" / "results" / f"timing_noise_{corpus.name}.json"
    result = {
        "command": " ".join(["python", *sys.argv]),
        "date": datetime.date.today().isoformat(),
        "cpu": str(target.attrs["mcpu"]),
        "within": args.within,
        "summary": summary,
        "kernels": rows,
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    print(f"written: {out}")


def dataset_rows(network: str, position: int) -> KernelData | None:
    """The dataset's rows of ``network``'s kernel at ``position`` (its files merged)."""
    files = sorted((paths.transfer() / network).glob(f"{position:03d}-*.npz"))
    files = [f for f in files if not f.name.endswith(".tmp.npz")]
    return KernelData.merge([KernelData.load(f) for f in files]) if files else None


def near_best(rows: KernelData | None, within: float) -> dict[str, float]:
    """The records whose dataset time is within ``within`` of the kernel's fastest (at most
    ``MAX_CANDIDATES``, fastest first): their times."""
    if rows is None or not rows.records:
        return {}
    ok = np.isfinite(rows.run_s)
    if not ok.any():
        return {}
    limit = rows.run_s[ok].min() * (1 + within)
    near = {r: float(t) for r, t in zip(rows.records, rows.run_s) if np.isfinite(t) and t <= limit}
    return dict(sorted(near.items(), key=lambda item: item[1])[:MAX_CANDIDATES])


def kernel_row(
    network: str,
    task: str,
    dataset: dict[str, float],
    first: dict[str, float],
    second: dict[str, float],
) -> dict:
    """One kernel's agreement between the dataset's timing and the two new ones."""
    both = sorted(set(first) & set(second) & set(dataset))
    fastest = {
        name: min(both, key=times.get)
        for name, times in (("dataset", dataset), ("first", first), ("second", second))
    }
    again = [first, second]
    differences = [abs(first[r] - second[r]) / min(first[r], second[r]) for r in both]
    return {
        "network": network,
        "task": task,
        "candidates": len(both),
        "retimings_agree": float(fastest["first"] == fastest["second"]),
        "dataset_agrees": mean(fastest["dataset"] == min(both, key=t.get) for t in again),
        "dataset_within_2pct": mean(
            t[fastest["dataset"]] <= 1.02 * min(t[r] for r in both) for t in again
        ),
        "relative_difference_median": statistics.median(differences),
        "times_ms": {r: [round(1e3 * t[r], 4) for t in (dataset, first, second)] for r in both},
    }


def mean(values) -> float:
    return round(float(np.mean([float(v) for v in values])), 3)


if __name__ == "__main__":
    main()
