"""Worker processes kept for the whole run, so a batch of candidates does not pay for their start.

A fresh worker imports TVM (about 5 s here) before its first job. MetaSchedule's builder and
our checker each started a new pool per batch, which cost about 10 s of every batch the
recommender timed. Pools here live as long as the process. A worker that times out or dies
is killed and started again on the next job (``PopenWorker``), and every worker is replaced
after ``RECYCLE_AFTER`` jobs (``recycled``): MetaSchedule starts a pool per batch because
long-lived builder workers leak memory, and a worker that loads a kernel library per job leaks
its memory maps (TVM never unloads one), until loading fails.

No worker outlives the run (each holds about 500 MB). TVM ends a pool's workers only in
``shutdown`` or a garbage collection that may never come; an idle worker leaves when its
parent's pipe closes, but a busy one runs its job to the end (a hung kernel: forever), and
the interpreter's exit waits for every job in flight. So ``shutdown_workers`` kills every pool
kept for the run (``end_with_the_run``), each worker with the processes it started, and runs
as the interpreter starts to exit (after a Ctrl-C or an error too), before it waits for the
pools' threads. A parent killed outright (SIGKILL, SIGTERM) runs nothing: for that, every
worker asks the kernel to kill it when the thread that started it ends (``init_worker``).
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401  its exit hook is registered before ours
import contextlib
import ctypes
import functools
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

import psutil
from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

from ..core.interrupts import ignore_ctrl_c

logger = logging.getLogger(__name__)

RECYCLE_AFTER = 256
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_pools: list[PopenPoolExecutor] = []  # kept for the run: shutdown_workers ends them
_caches: list[Callable] = []  # functions handing them out: shutdown_workers forgets their results


def init_worker() -> None:
    """Every worker's initializer: the Ctrl-C that reaches it is its parent's to handle
    (``ignore_ctrl_c``), and it dies with the thread that started it, which lives as long as
    its pool (Linux only; elsewhere a killed parent's idle workers still leave, busy ones
    once their job ends)."""
    ignore_ctrl_c()
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


P = ParamSpec("P")
T = TypeVar("T")


def cached_for_the_run(make: Callable[P, T]) -> Callable[P, T]:
    """``functools.cache`` for functions that hand out holders of long-lived workers (a pool,
    a runner); ``shutdown_workers`` forgets what they returned, so the next call starts anew."""
    cached = functools.cache(make)
    _caches.append(cached)
    return cached


def end_with_the_run(pool: PopenPoolExecutor) -> PopenPoolExecutor:
    """Register ``pool`` (ours, or one inside a MetaSchedule runner) for ``shutdown_workers``."""
    _pools.append(pool)
    return pool


def shutdown_workers() -> None:
    """Kill the workers of every pool kept for the run, and every process they started.

    Jobs not yet started are cancelled and jobs in flight end as failed. Called as the
    interpreter exits; a pool asked for afterwards (``worker_pool``, ``make_runner``) is new.
    """
    for cached in _caches:
        cached.cache_clear()
    while _pools:
        pool = _pools.pop()
        try:
            _end(pool)
        except Exception:  # the other pools still end; the exit goes on
            logger.exception("could not end a worker pool")


def _end(pool: PopenPoolExecutor) -> None:
    # TVM's shutdown closes a worker's pipes before killing it, and closing a pipe waits for a
    # read in progress: it would wait for every job in flight. Kill first, then let it clean up.
    threads = pool._threadpool
    threads.shutdown(wait=False, cancel_futures=True)
    for worker in list(pool._worker_map.values()):
        _kill_family(worker._proc)
    threads.shutdown(wait=True)  # a thread waiting on a killed worker gets a ChildProcessError
    pool.shutdown(wait=True)  # reaps the workers; kills one started while we killed (rare)


def _kill_family(proc) -> None:
    """Kill a worker process and its descendants (found first: orphans have no parent chain)."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(proc.pid)
        for process in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


# threading's exit hooks run before the interpreter joins the pools' threads, and in reverse
# order: after concurrent.futures' (imported above), whose hook joins them. atexit runs after.
threading._register_atexit(shutdown_workers)


def recycled(pool: PopenPoolExecutor, jobs: int = RECYCLE_AFTER) -> PopenPoolExecutor:
    """Make ``pool`` replace each of its workers after ``jobs`` jobs, as ``worker_pool``'s do.

    For pools TVM makes: MetaSchedule's ``LocalRunner`` keeps its one worker for good. Each
    kernel library it loads stays mapped (5 memory maps a load, never unmapped), so after about
    13,000 candidates every load failed ("cannot apply additional memory protection after
    relocation", the kernel's limit of 65,530 maps) and a dataset build recorded each later
    candidate as a run failure.
    """
    pool._maximum_process_uses = jobs
    for worker in pool._worker_map.values():  # started already (the runner's sanity check)
        worker._maximum_uses = worker._remaining_uses = jobs
    return pool


def restart_workers(pool: PopenPoolExecutor) -> None:
    """Kill ``pool``'s idle workers: its next job starts a fresh one. For a worker that runs
    but fails every job (a resource it exhausted), which TVM replaces only when one crashes
    or times out."""
    for worker in list(pool._worker_map.values()):
        worker.kill()


@cached_for_the_run
def worker_pool(role: str, workers: int | None, timeout_s: float) -> PopenPoolExecutor:
    """The process-wide pool for ``role`` (e.g. "build", "check")."""
    del role  # only part of the cache key: one pool per role
    pool = PopenPoolExecutor(
        max_workers=workers,
        timeout=timeout_s,
        maximum_process_uses=RECYCLE_AFTER,
        initializer=init_worker,
    )
    return end_with_the_run(pool)


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
