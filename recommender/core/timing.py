"""One timing round outside TVM, on TVM's protocol, so baselines and builds compare.

TVM's ``time_evaluator(number=1, repeat=1, min_repeat_ms=200)`` runs once to warm up, then
repeats the call until 0.2 s have passed and returns seconds per run. PyTorch eager and ONNX
Runtime are timed by the same rule, in the same interleaved rounds as TVM's builds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

ROUND_S = 0.2  # as long as one round of TVM's time_evaluator (min_repeat_ms=200)


def seconds_per_run(run: Callable[[], object], round_s: float = ROUND_S) -> float:
    """One warm-up call of ``run``, then calls for at least ``round_s``; seconds per call."""
    run()
    runs, start = 0, time.perf_counter()
    while True:
        run()
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= round_s:
            return elapsed / runs
