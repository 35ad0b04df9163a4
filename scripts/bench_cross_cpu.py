"""Schedules across CPUs: the shipped corpus, tuned on another CPU, against tuning on this one.

    python scripts/bench_cross_cpu.py MODEL --recommended DIR --log-here LOG [--from NAME] [--json]

Before: ``bash scripts/run.sh MODEL`` (the recommender's choice for this CPU from a corpus of
another CPU, in ``out/MODEL``) and ``recommender collect MODEL`` (MetaSchedule tuned here; LOG
is ``corpora/<this CPU>/datasets/logs/MODEL``). Times in one interleaved run on this machine:
untuned; the recommender's choice; the network's own log from the shipped corpus, tuned on its
CPU and replayed here; MetaSchedule tuned here; PyTorch eager when installed. Then how long
MetaSchedule tuning here took to match the first two. Every build is checked against the
untuned one first. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from recommender.core.corpora import CORPORA
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate import endtoend
from recommender.evaluate.baselines import MetaScheduleBuilds
from recommender.evaluate.comparison import pytorch_eager
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import load_zoo_network
from recommender.tasks.extract import prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a zoo network")
    parser.add_argument("--recommended", type=Path, required=True, help="recommend's --out dir")
    parser.add_argument("--log-here", type=Path, required=True, help="a log tuned on this CPU")
    parser.add_argument("--from", dest="corpus", default="znver3", help="the other CPU's corpus")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    target = host_target()
    use_target_threads(target)
    network = load_zoo_network(args.model)
    shipped = TuningLog.open(CORPORA / args.corpus / "datasets" / "logs" / args.model)
    here = TuningLog.open(args.log_here, target=target)
    builds = endtoend.Builds(prepare(network.mod, target), target)
    tuned_here = MetaScheduleBuilds(network, builds.prepared, target, here, builds)
    builds.want("untuned")
    builds.want("recommended", args.recommended)
    builds.want("shipped log, replayed", shipped.path)
    tuned_here.want([tuned_here.tuning_s])
    executables = {
        name: builds.get(name) for name in ("untuned", "recommended", "shipped log, replayed")
    }
    executables["MetaSchedule here"] = tuned_here.at(tuned_here.tuning_s)
    for name, executable in executables.items():
        problem = endtoend.outputs_match(executables["untuned"], executable, network)
        if problem:
            raise SystemExit(f"{name}: the build is wrong: {problem}")
    eager, _ = pytorch_eager(args.model, int(target.attrs["num-cores"]))
    others = {"PyTorch eager": eager} if eager else None
    times = endtoend.time_interleaved(executables, network, others=others)
    matched = tuned_here.times_to_match(
        {name: (executables[name], 0.0, None) for name in ("recommended", "shipped log, replayed")}
    )
    report = json.loads((args.recommended / "report.json").read_text())
    result = {
        "network": args.model,
        "this_cpu": str(target.attrs["mcpu"]),
        "shipped_log_cpu": shipped.provenance()["target_key"]["mcpu"],
        "ms": {name: round(t * 1e3, 3) for name, t in times.items()},
        "recommender_search_s": report["search_s"],
        "tuning_here_s": round(tuned_here.tuning_s, 1),
        "tuning_here_budget": here.provenance().get("budget", {}),
        "tuning_here_to_match_s": matched,
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    untuned = times["untuned"]
    print(
        f"{args.model} on {result['this_cpu']}; shipped corpus tuned on {result['shipped_log_cpu']}"
    )
    for name, seconds in times.items():
        print(f"  {name:24s} {seconds * 1e3:10.2f} ms  {untuned / seconds:6.2f}x")
    print(f"  recommender search: {report['search_s']:.1f} s")
    print(f"  MetaSchedule here: {tuned_here.tuning_s:.0f} s of tuning in all")
    for name, seconds in matched.items():
        when = "never" if seconds is None else f"after {seconds:.0f} s"
        print(f"  MetaSchedule here matched {name}: {when}")


if __name__ == "__main__":
    main()
