"""Never wrong code: a scheduled kernel must compute what the unscheduled kernel computes.

Both builds run on the same seeded random arguments (outputs pre-filled too, so a kernel that
forgets to write part of its output is caught); every argument is compared afterwards within a
tolerance fit to its dtype (reductions may be reordered by a schedule). Runs happen in worker
processes: a kernel that crashes or hangs is a failed check, not a dead run. With an RPC device
both builds run on the device itself, so cross-compiled kernels are checked where they run.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.targets import RemoteDevice
from .workers import run_jobs

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


_REFERENCE_OUTPUTS: dict[tuple, list[np.ndarray]] = {}  # in the worker: the last reference's


def _run_and_compare(
    candidate: str, reference: str, specs: list, seed: int, remote: tuple | None, call: str
) -> str | None:
    """Worker body: load both builds, run on identical arguments, compare every argument."""
    import tvm

    if remote is None:
        device, load = tvm.cpu(), tvm.runtime.load_module
    else:
        from tvm import rpc

        host, port, key = remote
        session = rpc.connect_tracker(host, port).request(key, session_timeout=VERIFY_TIMEOUT_S)
        device = session.cpu()

        def load(path: str):
            name = "check" + Path(path).suffix
            session.upload(path, target=name)
            return session.load_module(name)

    def outputs(path: str) -> list[np.ndarray]:
        module = load(path)
        args = [tvm.runtime.tensor(a, device) for a in random_arguments(specs, seed)]
        module.main(*args) if hasattr(module, "main") else module(*args)
        return [a.numpy() for a in args]

    key = (call, reference, seed, remote)  # a path may be reused by a later call's build
    if key not in _REFERENCE_OUTPUTS:  # the untuned kernel is slow: run it once per worker
        _REFERENCE_OUTPUTS.clear()
        _REFERENCE_OUTPUTS[key] = outputs(reference)
    for (_, dtype), expected, got in zip(specs, _REFERENCE_OUTPUTS[key], outputs(candidate)):
        problem = compare(got, expected, dtype)
        if problem:
            return problem
    return None


def check_builds(
    pairs: list[tuple[str, str]],
    specs: list[list[tuple[tuple[int, ...], str]]],
    *,
    seed: int = 0,
    remote: RemoteDevice | None = None,
) -> list[Check]:
    """Check each (candidate artifact, reference artifact) pair; ``specs`` gives the arguments.

    Runs on this host, or on the ``remote`` device behind an RPC tracker.
    """
    where = None if remote is None else (remote.host, remote.port, remote.key)
    call = uuid.uuid4().hex
    jobs = [(c, r, s, seed, where, call) for (c, r), s in zip(pairs, specs)]
    outcomes = run_jobs("check", 1, VERIFY_TIMEOUT_S, _run_and_compare, jobs, "verification run")
    return [
        Check(False, error[:300]) if error else Check(problem is None, problem)
        for problem, error in outcomes
    ]
