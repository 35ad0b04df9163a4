"""Whole-network builds and timings: untuned, or with a MetaSchedule database applied.

Untuned means the plain Relax build of the same lowered module (naive single-threaded loops,
far weaker than TVM's old TOPI schedules): every speedup against it says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tvm
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from .network import Network
from .verify import compare

TIMING_REPEATS = 5


def build(prepared: tvm.IRModule, target: tvm.target.Target, database=None):
    """Compile a network (``tasks.prepare``d); tasks without a record stay unscheduled."""
    database = database if database is not None else ms.database.MemoryDatabase()
    return ms.relax_integration.compile_relax(database, prepared, target, params=None)


def _vm(executable) -> relax.VirtualMachine:
    return relax.VirtualMachine(executable, tvm.cpu())


def run(executable, inputs: list[np.ndarray]) -> list[np.ndarray]:
    out = _vm(executable)["main"](*[tvm.runtime.tensor(a) for a in inputs])
    outs = out if isinstance(out, (list, tuple, tvm.ir.Array)) else [out]
    return [o.numpy() for o in outs]


def outputs_match(reference, candidate, network: Network) -> str | None:
    """None when ``candidate`` computes what ``reference`` does on seeded random inputs."""
    inputs = network.random_inputs()
    for expected, got in zip(run(reference, inputs), run(candidate, inputs)):
        problem = compare(got, expected, str(expected.dtype))
        if problem:
            return problem
    return None


def time_interleaved(
    executables: dict[str, object],
    network: Network,
    *,
    repeats: int = TIMING_REPEATS,
    others: dict[str, Callable[[], float]] | None = None,
) -> dict[str, float]:
    """Median end-to-end seconds of each build, measured in alternating rounds.

    The machine is shared and noisy: rounds alternate between builds so drift hits all alike.
    Each round is one ``time_evaluator`` call (1 warm-up, then runs for at least 200 ms).
    ``others`` are timed in the same rounds: each call is one round, returning seconds per run
    (PyTorch eager, say).
    """
    inputs = [tvm.runtime.tensor(a) for a in network.random_inputs()]
    dev = tvm.cpu()
    timers: dict[str, Callable[[], float]] = {}
    for name, exe in executables.items():
        vm = _vm(exe)
        vm.set_input("main", *inputs)
        evaluator = vm.time_evaluator("invoke_stateful", dev, number=1, repeat=1, min_repeat_ms=200)
        timers[name] = lambda evaluator=evaluator: evaluator("main").mean
    timers |= others or {}
    samples: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(repeats):
        for name, timer in timers.items():
            samples[name].append(timer())
    return {name: statistics.median(values) for name, values in samples.items()}


def export(executable, path: Path) -> Path:
    """Write the compiled network as a shared library loadable with ``tvm.runtime.load_module``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    executable.export_library(str(path))
    return path
