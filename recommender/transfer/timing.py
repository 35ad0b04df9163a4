"""Time candidates in chunks (worker start-up is paid once per chunk); results stay on them."""

from __future__ import annotations

import time
from collections.abc import Callable

import tvm

from ..backend.measure import Measurement, Stage, measure
from ..core.interrupts import checkpoint
from ..core.targets import RemoteDevice
from .candidate import Job, KernelResult, outcome

CHUNK = 32  # candidates per build/verify/run batch: worker start-up is paid once per chunk


def measure_kernels(
    kernels: list[KernelResult],
    target: tvm.target.Target,
    *,
    remote: RemoteDevice | None = None,
    on_progress: Callable[[int], None] = lambda n: None,
    on_chunk: Callable[[list[Job], float], None] | None = None,
) -> None:
    """Time each kernel's untuned workload and all its applied candidates (those not
    measured yet)."""
    jobs: list[Job] = []
    for kernel in kernels:
        checkpoint()  # applying every candidate first takes a minute on large networks
        if not any(c.applies for c in kernel.candidates):
            continue  # nothing to compare with: the untuned time is not needed
        jobs.append((kernel, None))
        jobs.extend((kernel, c) for c in kernel.candidates if c.applies)
    measure_jobs(jobs, target, remote=remote, on_progress=on_progress, on_chunk=on_chunk)


def measure_jobs(
    jobs: list[Job],
    target: tvm.target.Target,
    *,
    remote: RemoteDevice | None = None,
    timed: bool = True,
    on_progress: Callable[[int], None] = lambda n: None,
    on_chunk: Callable[[list[Job], float], None] | None = None,
) -> None:
    """Measure untuned workloads and candidates in chunks of ``CHUNK``, storing the results on
    them (what is measured already is skipped); with ``timed=False`` candidates are only checked
    against their workload. ``on_chunk`` gets each chunk once measured, with its seconds."""
    for _, candidate in jobs:
        if candidate is not None and not candidate.applied.ok:  # a cached outcome gone stale
            candidate.measurement = Measurement(None, Stage.APPLY, candidate.applied.reason)
    on_progress(sum(outcome(job) is not None for job in jobs))
    jobs = [job for job in jobs if outcome(job) is None]
    for start in range(0, len(jobs), CHUNK):
        checkpoint()
        began = time.perf_counter()
        chunk = jobs[start : start + CHUNK]
        groups: dict[int, tuple[tvm.IRModule, list]] = {}
        for kernel, candidate in chunk:
            mod = kernel.task.mod if candidate is None else candidate.applied.schedule.mod
            groups.setdefault(id(kernel), (kernel.task.mod, []))[1].append(mod)
        results = measure(list(groups.values()), target, remote=remote, timed=timed)
        flat = iter([m for group in results for m in group])
        for (kernel, candidate), result in zip(_group_order(chunk), flat):
            if candidate is None:
                kernel.untuned = result
            else:
                candidate.measurement = result
        on_progress(len(chunk))
        if on_chunk is not None:
            on_chunk(chunk, time.perf_counter() - began)


def _group_order(chunk: list) -> list:
    """``chunk`` reordered group by group, the order ``measure`` returns results in."""
    order: dict[int, list] = {}
    for kernel, candidate in chunk:
        order.setdefault(id(kernel), []).append((kernel, candidate))
    return [job for jobs in order.values() for job in jobs]
