"""Timing rounds in one worker process per contender, taken in turn, the others stopped.

Runtimes timed side by side slow each other down: an idle pool's threads still wake and spin
(TVM's keep doing so between runs), and PyTorch's OpenMP threads wait for each other at every
barrier, so one of them losing its core for a scheduler tick (4 ms) costs the whole operator
that tick. Measured here (docs/tvm.md): PyTorch's 0.4 ms 1x1 convolution took 32 ms in rounds
taken in one process with TVM and ONNX Runtime, 1-3 ms with each in a worker of its own. So
each contender lives in a worker process of its own, kept for the run, asked for one round at
a time, and stopped (SIGSTOP) between its rounds: only the contender being timed can run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from ..backend.workers import run_jobs, worker_pool

Maker = tuple[Callable[..., Callable[[], float]], tuple]  # (function, args) -> one-round timer
ROUND_TIMEOUT_S = 600.0  # a first round builds the timer: loading VGG-16's weights, say
SETTLE_S = 0.05  # between contenders: the previous one's threads stop spinning

_timers: dict[str, Callable[[], float]] = {}  # in a worker: the timer of the current job


def _one_round(key: str, make: Callable[..., Callable[[], float]], args: tuple) -> float:
    """In the contender's worker: make its timer once per ``key``, then time one round."""
    if key not in _timers:
        _timers.clear()  # one job at a time: the previous one's timer and data go
        _timers[key] = make(*args)
    return _timers[key]()


class RoundFailed(RuntimeError):
    """A contender's round raised or timed out in its worker (the reason is the message)."""


def in_worker(contender: str, key: str, make: Callable, args: tuple) -> Callable[[], float]:
    """A timing round of ``make(*args)``'s timer, run in ``contender``'s own worker process
    (made there on the first call); raises ``RoundFailed`` with the worker's reason."""

    role = f"timing-{contender}"

    def one_round() -> float:
        time.sleep(SETTLE_S)
        _signal_workers(role, signal.SIGCONT)
        try:
            [(seconds, error)] = run_jobs(
                role, 1, ROUND_TIMEOUT_S, _one_round, [(key, make, args)], "round"
            )
        finally:
            _signal_workers(role, signal.SIGSTOP)
        if error:
            raise RoundFailed(error)
        return seconds

    return one_round


def _signal_workers(role: str, signum: int) -> None:
    """Stop or continue the live worker processes of ``role``'s pool (a stopped worker still
    ends with the run: ``shutdown_workers`` kills it)."""
    for worker in list(worker_pool(role, 1, ROUND_TIMEOUT_S)._worker_map.values()):
        proc = worker._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)


def time_in_turn(
    key: str, makers: dict[str, Maker], rounds: int
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Seconds per run of each contender in ``rounds`` rounds (each its worker's, in turn), and
    why a contender has none (its timer or a round failed: it is dropped from later rounds).
    ``key`` names the job: a worker keeps one job's timer between rounds."""
    timers = {name: in_worker(name, key, make, args) for name, (make, args) in makers.items()}
    samples: dict[str, list[float]] = {name: [] for name in makers}
    failures: dict[str, str] = {}
    for _ in range(rounds):
        for name, timer in timers.items():
            if name in failures:
                continue
            try:
                samples[name].append(timer())
            except RoundFailed as err:
                failures[name] = str(err)
                samples.pop(name)
    return samples, failures
