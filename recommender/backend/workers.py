"""Worker processes kept for the whole run, so a batch of candidates does not pay for their start.

A fresh worker imports TVM (about 5 s here) before its first job. MetaSchedule's builder and
our checker each started a new pool per batch, which cost about 10 s of every batch the
recommender timed. Pools here live as long as the process. A worker that times out or dies
is killed and started again on the next job (``PopenWorker``), and every worker is replaced
after ``RECYCLE_AFTER`` jobs: MetaSchedule starts a pool per batch because long-lived builder
workers leak memory.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

from ..core.interrupts import ignore_ctrl_c

RECYCLE_AFTER = 256


@functools.cache
def worker_pool(role: str, workers: int | None, timeout_s: float) -> PopenPoolExecutor:
    """The process-wide pool for ``role`` (e.g. "build", "check")."""
    del role  # only part of the cache key: one pool per role
    return PopenPoolExecutor(
        max_workers=workers,
        timeout=timeout_s,
        maximum_process_uses=RECYCLE_AFTER,
        initializer=ignore_ctrl_c,
    )


def run_jobs(
    role: str, workers: int | None, timeout_s: float, fn: Callable, jobs: list[tuple], what: str
) -> Iterator[tuple[Any, str | None]]:
    """``fn(*job)`` for every job in ``role``'s pool, in order: ``(value, None)``, or
    ``(None, why)`` when ``what`` (e.g. "build") timed out or raised.

    Outcomes come as jobs finish, so a caller can keep each one and stop between them: closing
    the iterator early cancels the jobs not yet started.
    """
    pool = worker_pool(role, workers, timeout_s)
    for result in pool.map_with_error_catching(lambda job: fn(*job), jobs):
        if result.status == StatusKind.COMPLETE:
            yield result.value, None
        elif result.status == StatusKind.TIMEOUT:
            yield None, f"{what} timed out after {timeout_s:g} s"
        else:
            yield None, f"{what} failed: {result.value}"
