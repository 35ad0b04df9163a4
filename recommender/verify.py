"""Never wrong code: a scheduled kernel must compute what the unscheduled kernel computes.

Both builds run on the same seeded random arguments (outputs pre-filled too, so a kernel that
forgets to write part of its output is caught); every argument is compared afterwards within a
tolerance fit to its dtype (reductions may be reordered by a schedule). Runs happen in worker
processes: a kernel that crashes or hangs is a failed check, not a dead run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

VERIFY_TIMEOUT_S = 60.0
# (rtol, atol relative to the largest reference magnitude) per dtype kind and width
_TOLERANCE = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-3, 1e-4),
    "float64": (1e-7, 1e-9),
}


@dataclass(frozen=True)
class Check:
    ok: bool
    error: str | None = None


def random_arguments(specs: list[tuple[tuple[int, ...], str]], seed: int) -> list[np.ndarray]:
    """Seeded arguments; integers stay in [0, 8) so index inputs (``take``) stay in bounds."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in specs:
        kind = np.dtype(dtype).kind if dtype != "bfloat16" else "f"
        if kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif kind == "b":
            arrays.append(rng.integers(0, 2, shape).astype(bool))
        else:
            arrays.append(rng.integers(0, 8, shape).astype(dtype))
    return arrays


def compare(got: np.ndarray, expected: np.ndarray, dtype: str) -> str | None:
    """None when equal within the dtype's tolerance, else what differs."""
    if dtype not in _TOLERANCE:
        return None if np.array_equal(got, expected) else "integer or boolean outputs differ"
    if not np.isfinite(got).all() and np.isfinite(expected).all():
        return "non-finite values where the reference is finite"
    rtol, atol_rel = _TOLERANCE[dtype]
    atol = atol_rel * max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    if np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True):
        return None
    worst = float(np.max(np.abs(got.astype("float64") - expected.astype("float64"))))
    return f"outputs differ: max abs error {worst:.3g} (rtol {rtol}, atol {atol:.3g})"


def _run_and_compare(candidate: str, reference: str, specs: list, seed: int) -> str | None:
    """Worker body: load both builds, run on identical arguments, compare every argument."""
    import tvm

    device = tvm.cpu()
    results = []
    for path in (reference, candidate):
        module = tvm.runtime.load_module(path)
        host = random_arguments(specs, seed)
        args = [tvm.runtime.tensor(a, device) for a in host]
        module.main(*args) if hasattr(module, "main") else module(*args)
        results.append([a.numpy() for a in args])
    for (_, dtype), expected, got in zip(specs, results[0], results[1]):
        problem = compare(got, expected, dtype)
        if problem:
            return problem
    return None


def check_builds(
    pairs: list[tuple[str, str]], specs: list[list[tuple[tuple[int, ...], str]]], *, seed: int = 0
) -> list[Check]:
    """Check each (candidate artifact, reference artifact) pair; ``specs`` gives the arguments."""
    pool = PopenPoolExecutor(max_workers=1, timeout=VERIFY_TIMEOUT_S)
    checks = []
    try:
        jobs = [(c, r, s, seed) for (c, r), s in zip(pairs, specs)]
        for result in pool.map_with_error_catching(lambda job: _run_and_compare(*job), jobs):
            if result.status == StatusKind.COMPLETE:
                checks.append(Check(result.value is None, result.value))
            elif result.status == StatusKind.TIMEOUT:
                checks.append(Check(False, f"verification timed out after {VERIFY_TIMEOUT_S} s"))
            else:
                checks.append(Check(False, f"verification run failed: {result.value}"[:300]))
    finally:
        pool.shutdown()
    return checks
