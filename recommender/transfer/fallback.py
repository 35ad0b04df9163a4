"""The last resort of a kernel no source schedule reaches: MetaSchedule's own design space.

A kernel of a class no other network has (BERT's GELU and layer norm in the zoo; any new
activation or normalisation in a user's network) and no anchor block has no candidate at
either level, and would stay on naive loops on one core. One postprocessed sample of each of
MetaSchedule's design spaces for it (``transfer.apply.design_space``) gets the structure
tuning would start from: inlined producers, parallel outer loops, vector inner ones. Each is
checked against the untuned kernel like any candidate, and timed against it unless nothing is
timed.
"""

from __future__ import annotations

import tvm

from ..backend.measure import Measurement
from ..core.targets import RemoteDevice
from ..tasks.extract import Task
from .candidate import Candidate, KernelResult, default_candidates
from .timing import measure_jobs


def fall_back(
    tasks: list[Task],
    target: tvm.target.Target,
    remote: RemoteDevice | None = None,
    *,
    timed: bool = True,
    untuned: list[Measurement | None] | None = None,
) -> list[tuple[KernelResult, Candidate | None]]:
    """Each task's default-level candidates, checked (with ``timed``, timed with the untuned
    kernel too, unless ``untuned`` has its measurement already), and the one to take: the
    fastest that beats the untuned kernel, or without timing the first that passed the check."""
    known = untuned or [None] * len(tasks)
    kernels = [
        KernelResult(task, default_candidates(task, target), measurement)
        for task, measurement in zip(tasks, known, strict=True)
    ]
    jobs = [(k, c) for k in kernels for c in ([None] if timed else []) + k.candidates]
    measure_jobs(jobs, target, remote=remote, timed=timed)
    if timed:
        return [(kernel, kernel.best) for kernel in kernels]
    valid = ([c for c in k.candidates if c.measurement.ok] for k in kernels)
    return [(kernel, next(iter(v), None)) for kernel, v in zip(kernels, valid)]
