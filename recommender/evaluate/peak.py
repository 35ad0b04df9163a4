"""The CPU's fp32 peak, measured: a loop of independent fused multiply-adds on every core.

A kernel's GFLOP/s means little without the ceiling it runs under, and datasheets state clocks
a shared virtual machine does not keep. The loop keeps ``ACCUMULATORS`` vector registers in
flight per core (enough to hide the FMA latency on two pipes) and never touches memory; it is
built by TVM for the target, for each vector width the target may have, and the fastest counts.
"""

from __future__ import annotations

import statistics

import numpy as np
import tvm
from tvm.script import tirx as T

ACCUMULATORS = 12
ITERATIONS = 1 << 16


def _fma_loop(cores: int, lanes: int):
    @T.prim_func(s_tir=True)
    def fma_loop(out: T.Buffer((cores, ACCUMULATORS * lanes), "float32")):
        for core in T.parallel(cores):
            acc = T.alloc_buffer((ACCUMULATORS, lanes), "float32", scope="local")
            for a, lane in T.grid(ACCUMULATORS, lanes):
                acc[a, lane] = T.float32(1.0)
            for _ in range(ITERATIONS):
                for a in T.unroll(ACCUMULATORS):
                    for lane in T.vectorized(lanes):
                        acc[a, lane] = acc[a, lane] * T.float32(0.999999) + T.float32(1e-6)
            for a, lane in T.grid(ACCUMULATORS, lanes):
                out[core, a * lanes + lane] = acc[a, lane]

    return fma_loop


def fp32_peak_gflops(target: tvm.target.Target, repeats: int = 5) -> dict[str, float]:
    """Measured fp32 GFLOP/s of ``target``'s cores (an FMA counts two operations): the best
    vector width's median over ``repeats`` rounds, with each width's figure beside it."""
    cores = int(target.attrs["num-cores"])
    by_width = {}
    for lanes in (8, 16):  # AVX2 and AVX-512 widths; LLVM splits what the CPU lacks
        lib = tvm.compile(tvm.IRModule({"main": _fma_loop(cores, lanes)}), target=target).jit()
        out = tvm.runtime.tensor(np.zeros((cores, ACCUMULATORS * lanes), "float32"))
        timer = lib.time_evaluator("main", tvm.cpu(), number=1, repeat=repeats, min_repeat_ms=100)
        seconds = statistics.median(timer(out).results)
        flops = 2.0 * cores * ITERATIONS * ACCUMULATORS * lanes
        by_width[f"{lanes * 32}-bit"] = flops / seconds / 1e9
    return {"peak_gflops": max(by_width.values()), **by_width}
