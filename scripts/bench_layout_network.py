"""Whole networks with blocked convolutions (NCHW16c) against the same networks in NCHW, both
tuned by MetaSchedule on this CPU with the same trials per task, timed end to end in one
interleaved run with PyTorch eager and ONNX Runtime.

    .venv/bin/python scripts/bench_layout_network.py [MODEL ...] [--trials-per-task 64]

The NCHW build is the network's log in a native corpus of this CPU (``corpora/<cpu>/`` or a
variant such as ``corpora/<cpu>-native/``, tuned by ``scripts/rebuild_corpus.py``: it must be
there). The network with blocked
convolutions (``tasks.layouts``) is tuned into
``datasets/kernel_variants/<cpu>/layouts-network-<T>/<MODEL>-nchw16c/`` (resumable). Both
builds are checked against the untuned NCHW build on random inputs before they are timed.
Writes ``docs/results/layouts_network_<cpu>.json`` after every network. Run it alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recommender.core import corpora
from recommender.core.configuration import Configuration
from recommender.core.corpora import CHECKOUT
from recommender.core.errors import InputError
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate import endtoend
from recommender.evaluate.comparison import baselines
from recommender.evaluate.searches import read_json, write_json
from recommender.logs.collect import collect
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import load_zoo_network
from recommender.tasks.extract import extract_tasks, prepare
from recommender.tasks.layouts import BLOCK

NCHW, BLOCKED = "nchw (own log)", f"nchw{BLOCK}c"
CONFIGURATIONS = {NCHW: Configuration(), BLOCKED: Configuration(layout=f"NCHW{BLOCK}c")}


def compare(network, target, logs: dict[str, str]) -> dict:
    """Both builds of ``network`` (one per layout, from its log in ``logs``), checked against
    the untuned native build, then timed in one interleaved run with the runtimes."""
    builds = {
        k: endtoend.Builds(prepare(network.mod, target, CONFIGURATIONS[k]), target) for k in logs
    }
    builds[NCHW].want("untuned")
    for key, log in logs.items():
        builds[key].want(key, log)
        builds[key].build_wanted()
    reference = endtoend.ReferenceOutputs(builds[NCHW].get("untuned"), network)
    executables, wrong = {}, {}
    for key in logs:
        exe = builds[key].get(key)
        problem = reference.mismatch(exe)
        if problem:
            wrong[key] = problem
        else:
            executables[key] = exe
    others, missing = baselines(network.name, int(target.attrs["num-cores"]))
    times = endtoend.time_interleaved(executables, network, others=others)
    return {
        "ms": {k: round(v * 1e3, 3) for k, v in times.items()},
        "tasks": {
            k: len(extract_tasks(network, target, configuration=CONFIGURATIONS[k])) for k in logs
        },
        "wrong": wrong,
        "baselines_missing": missing,
    }


def native_logs(cpu: str) -> Path:
    """The logs of this CPU's corpus in the native configuration."""
    for corpus in corpora.find_corpora():
        if corpus.cpu == cpu and corpus.configuration == Configuration():
            return corpus.root / "datasets" / "logs"
    raise InputError(f"no native corpus of {cpu}: `rebuild_corpus.py --corpus {cpu}-native`")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["resnet18"], help="zoo networks")
    parser.add_argument("--trials-per-task", type=int, default=64)
    args = parser.parse_args()
    target = host_target()
    threads = use_target_threads(target)
    cpu = str(target.attrs["mcpu"])
    own = native_logs(cpu)
    out = CHECKOUT / "docs" / "results" / f"layouts_network_{cpu}.json"
    results = read_json(out) or {"networks": {}}
    results["meta"] = {
        "cpu": cpu,
        "target": str(target),
        "tvm_threads": threads,
        "trials_per_task": args.trials_per_task,
        "command": " ".join(["python", *sys.argv]),
    }
    variants = CHECKOUT / "datasets" / "kernel_variants" / cpu
    for name in args.models:
        if not (own / name / "provenance.json").exists():
            raise InputError(
                f"no log of {name} in this CPU's native corpus: run rebuild_corpus.py", path=own
            )
        blocked_dir = variants / f"layouts-network-{args.trials_per_task}" / f"{name}-{BLOCKED}"
        network = load_zoo_network(name)
        summary = collect(
            network,
            target,
            blocked_dir,
            configuration=CONFIGURATIONS[BLOCKED],
            trials_per_task=args.trials_per_task,
        )
        if summary.status == "interrupted":
            return 130
        logs = {NCHW: TuningLog.open(own / name).path, BLOCKED: TuningLog.open(blocked_dir).path}
        row = compare(network, target, logs)
        results["networks"][name] = row
        write_json(out, results)
        print(f"{name} on {cpu}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in row["ms"].items()))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
