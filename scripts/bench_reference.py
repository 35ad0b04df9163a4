"""What timing the untuned reference kernels costs, with the candidates' protocol and with one
run per repeat (``measure.REFERENCE_EVALUATOR``), and how far the two times differ.

    python scripts/bench_reference.py [MODEL] [--rounds 3] [--out JSON]

Every transfer run times each kernel's untuned workload once; its naive loops run for up to
hundreds of ms, so at ``number`` = 3 the references can cost more than the candidates. The
two protocols alternate round by round (interleaved) on the same built kernels; prints the
median wall time of each, their ratio, and the median and largest relative difference of the
per-kernel times, and writes them to ``docs/results/reference_timing_<cpu>.json``. Run it alone
on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from tvm.s_tir import meta_schedule as ms

from recommender.backend.measure import (
    EVALUATOR,
    REFERENCE_EVALUATOR,
    arg_specs,
    build_all,
    make_runner,
    remove_artifact,
)
from recommender.core.corpora import CHECKOUT
from recommender.core.targets import host_target, use_target_threads
from recommender.networks.zoo import load_zoo_network
from recommender.tasks.extract import extract_tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="resnet18")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    target = host_target()
    cpu = str(target.attrs["mcpu"])
    out = args.out or CHECKOUT / "docs" / "results" / f"reference_timing_{cpu}.json"
    use_target_threads(target)
    tasks = extract_tasks(load_zoo_network(args.model), target)
    built = build_all([t.mod for t in tasks], target)
    inputs = [
        ms.runner.RunnerInput(b.artifact_path, "cpu", arg_specs(t.mod)[0])
        for t, b in zip(tasks, built)
        if not b.error_msg
    ]
    protocols = {"number=3": EVALUATOR, "number=1": REFERENCE_EVALUATOR}
    runners = {name: make_runner(None, config) for name, config in protocols.items()}
    wall: dict[str, list[float]] = {name: [] for name in protocols}
    times: dict[str, list[list[float]]] = {name: [] for name in protocols}
    try:
        for round_ in range(args.rounds):
            order = list(protocols) if round_ % 2 == 0 else list(reversed(protocols))
            for name in order:
                start = time.perf_counter()
                results = [f.result() for f in runners[name].run(inputs)]
                wall[name].append(time.perf_counter() - start)
                times[name].append(
                    [statistics.median(float(s) for s in r.run_secs) for r in results]
                )
    finally:
        for b in built:
            remove_artifact(b.artifact_path)
    per_kernel = {
        name: [statistics.median(k) for k in zip(*rounds)] for name, rounds in times.items()
    }
    differences = [abs(a - b) / b for a, b in zip(per_kernel["number=1"], per_kernel["number=3"])]
    medians = {name: statistics.median(v) for name, v in wall.items()}
    result = {
        "network": args.model,
        "cpu": cpu,
        "command": " ".join(["python", *sys.argv]),
        "kernels": len(inputs),
        "untuned_sum_ms": round(1e3 * sum(per_kernel["number=3"]), 1),
        "wall_s_median": {k: round(v, 2) for k, v in medians.items()},
        "wall_s_rounds": {k: [round(x, 2) for x in v] for k, v in wall.items()},
        "speedup": round(medians["number=3"] / medians["number=1"], 2),
        "relative_difference": {
            "median": round(statistics.median(differences), 4),
            "max": round(max(differences), 4),
        },
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    print(f"written: {out}")


if __name__ == "__main__":
    main()
