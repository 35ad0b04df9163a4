"""Whole-network builds: one after the other in this process, or side by side in workers.

    python scripts/bench_network_builds.py [NETWORK] [--builds 4]

Builds the network with MetaSchedule's records after ``--builds`` points of its log (what the
evaluation's curve and bisections compile), first with ``endtoend.build`` in this process (each
followed by the VM creation that generates its code), then with ``endtoend.Builds`` (compiled
in worker processes, one per core). Prints both wall times and their ratio, then times the two
builds of the full log interleaved, to show that where a build is compiled does not change its
speed. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import time

from recommender.core import paths
from recommender.core.targets import parse_target, use_target_threads
from recommender.evaluate import endtoend
from recommender.evaluate.baselines import MetaScheduleBuilds
from recommender.logs.history import database_at
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import load_zoo_network
from recommender.tasks.extract import prepare


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("network", nargs="?", default="resnet18")
    parser.add_argument("--builds", type=int, default=4)
    args = parser.parse_args()
    target = parse_target(None)
    use_target_threads(target)
    network = load_zoo_network(args.network)
    prepared = prepare(network.mod, target)
    log = TuningLog.open(paths.logs() / args.network, target=target)
    metaschedule = MetaScheduleBuilds(network, prepared, target, log)
    stamps = metaschedule.grid(args.builds)

    start = time.perf_counter()
    in_process = []
    for stamp in stamps:
        executable = endtoend.build(prepared, target, database_at(metaschedule.timed, stamp))
        endtoend.run(executable, network.random_inputs())  # the first VM generates the code
        in_process.append(executable)
    sequential_s = time.perf_counter() - start

    start = time.perf_counter()
    metaschedule.want(stamps)
    side_by_side = [metaschedule.at(stamp) for stamp in stamps]
    parallel_s = time.perf_counter() - start

    print(f"{args.network}: {len(stamps)} builds (log stamps {[round(s) for s in stamps]})")
    print(f"  in this process, one after the other: {sequential_s:.1f} s")
    print(f"  in workers, side by side:             {parallel_s:.1f} s")
    print(f"  ratio: {sequential_s / parallel_s:.2f}x")
    problem = endtoend.outputs_match(in_process[-1], side_by_side[-1], network)
    times = endtoend.time_interleaved(
        {"in_process": in_process[-1], "worker": side_by_side[-1]}, network, repeats=9
    )
    print(
        f"  full log, timed interleaved (median of 9): in process {times['in_process'] * 1e3:.2f}"
        f" ms, from a worker {times['worker'] * 1e3:.2f} ms"
        f" (ratio {times['worker'] / times['in_process']:.3f}); outputs "
        + ("match" if problem is None else f"differ: {problem}")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
