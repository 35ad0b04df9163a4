"""The evaluation in the edge profile: one core, candidates checked and timed through TVM's RPC
tracker on a loopback server limited to one thread (a stand-in for a one-core board).

    python scripts/evaluate_edge.py [NETWORK ...] [--methods a,b] [--quick]

Writes ``out/evaluate_edge/`` and ``docs/results_edge.md`` (with ``--quick``:
``out/evaluate_edge_quick/``, ``docs/results_edge_quick.md``); resumable like ``evaluate.py``.
Whole networks are timed on this host with ``TVM_NUM_THREADS=1``. MetaSchedule's reference is
the corpus log (tuned with every core), timed on one core like every other build.
"""

import sys

from recommender.backend.loopback import loopback_device
from recommender.cli.main import main

DEFAULTS = ["--methods", "transfer-paper,top-0,top-1,budget-30s"]

if __name__ == "__main__":
    with loopback_device("edge", threads=1) as device:
        code = main(
            [
                "evaluate",
                "--profile",
                "edge",
                "--rpc",
                str(device),
                *DEFAULTS,
                *sys.argv[1:],
                "--page",
            ]
        )
    sys.exit(code)
