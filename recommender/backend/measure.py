"""Build and time candidates through MetaSchedule's builder and runner (local or RPC).

Timing protocol (fixed, so numbers from collection, transfer and recommendation compare):
one warm-up run, then ``repeat`` = 3 measurements of ``number`` = 3 runs each, each repeat at
least ``min_repeat_ms`` = 50 ms long; a candidate's time is the median of the repeats. The
unscheduled reference is timed with ``number`` = 1: its naive loops take up to hundreds of ms
per run, and its time only has to be compared with the candidates'. Builds and runs happen in
separate worker processes, so a candidate that crashes or hangs is a failed result, never a
dead run; a candidate that passed the check but fails to run is timed once more in a fresh
worker, in case the worker, not the candidate, was at fault.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import statistics
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

import tvm
from tvm.s_tir import meta_schedule as ms

from ..core.targets import RemoteDevice
from .verify import check_builds
from .workers import (
    cached_for_the_run,
    end_with_the_run,
    init_worker,
    recycled,
    restart_workers,
    run_jobs,
)

logger = logging.getLogger(__name__)

EVALUATOR = ms.runner.EvaluatorConfig(
    number=3, repeat=3, min_repeat_ms=50, enable_cpu_cache_flush=False
)
REFERENCE_EVALUATOR = EVALUATOR._replace(number=1)
BUILD_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 30.0


def build_without_intrin_import(mod, target, _params):
    """MetaSchedule's ``default_build`` minus ``import tvm.s_tir.tensor_intrin``.

    That import registers CUDA and other tensor intrinsics and takes 20-27 s in every fresh
    builder worker (the pool restarts each batch), so builds under the default 30 s timeout
    failed at random. Lowering an already scheduled CPU kernel does not need it. Like
    ``default_build``, it builds the kernel as it runs once its weights are prepacked
    (``without_layout_rewrite``).
    """
    from tvm.driver import build as tvm_build

    return tvm_build(without_layout_rewrite(mod), target=target)


def without_layout_rewrite(mod: tvm.IRModule) -> tvm.IRModule:
    """The kernel without the weight-layout rewrite MetaSchedule's ``RewriteLayout`` adds to a
    schedule of a ``layout_free_buffers`` workload: the weight argument in the rewritten layout,
    as a network built with prepacked weights passes it. A no-op for any other kernel."""
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)


def export_shared_library(mod) -> str:
    """Link once, in the builder worker: MetaSchedule's default exports a ``.tar`` of objects,
    which the checker and the runner each link again when they load it."""
    path = os.path.join(tempfile.mkdtemp(), "tvm_tmp_mod.so")
    mod.export_library(path)
    return path


def export_object_archive(mod) -> str:
    """A ``.tar`` of object files, for a device that links code for its own architecture."""
    from tvm.support.tar import tar

    path = os.path.join(tempfile.mkdtemp(), "tvm_tmp_mod.tar")
    mod.export_library(path, fcompile=tar)
    return path


class Built(NamedTuple):
    artifact_path: str | None
    error_msg: str | None


def _build_in_worker(mod: tvm.IRModule, target: tvm.target.Target, for_device: bool) -> str:
    """A build to check (and time) as given: a weight-layout rewrite stays in the kernel, which
    then reads its weight in the layout the unscheduled kernel does, so outputs compare."""
    from tvm.driver import build as tvm_build

    runtime_module = tvm_build(mod, target=target)
    export = export_object_archive if for_device else export_shared_library
    return export(runtime_module)


def build_all(
    mods: list[tvm.IRModule], target: tvm.target.Target, *, remote: RemoteDevice | None = None
) -> list[Built]:
    """Build each kernel in the process-wide build workers (one per core): shared libraries for
    this host, object archives for an RPC device."""
    jobs = [(mod, target, remote is not None) for mod in mods]
    outcomes = run_jobs("build", None, BUILD_TIMEOUT_S, _build_in_worker, jobs, "build")
    return [Built(path, error) for path, error in outcomes]


@functools.cache
def make_builder(
    max_workers: int | None = None, *, remote: RemoteDevice | None = None
) -> ms.builder.LocalBuilder:
    """MetaSchedule's builder for tuning (``collect``), building as ``build_all`` does.

    Cached: constructing a MetaSchedule builder or runner spawns a worker for a sanity check,
    about 5.5 s each here, which was a third of the cost of timing a batch of 32. The builder
    keeps no worker between batches: it starts and ends a pool for each.
    """
    return ms.builder.LocalBuilder(
        max_workers=max_workers,
        timeout_sec=BUILD_TIMEOUT_S,
        f_build=build_without_intrin_import,
        f_export=export_object_archive if remote is not None else export_shared_library,
        initializer=init_worker,
    )


def make_runner(
    remote: RemoteDevice | None = None, evaluator: ms.runner.EvaluatorConfig = EVALUATOR
) -> ms.runner.Runner:
    """A local runner, or an RPC runner that asks the tracker for a device with ``remote.key``.

    Cached as ``make_builder`` is (one per device and protocol, however the call spells them);
    the runner's worker is replaced every ``RECYCLE_AFTER`` jobs (``workers.recycled``) and
    ends with the run (``workers.shutdown_workers``).
    """
    return _runner(remote, evaluator)


@cached_for_the_run
def _runner(remote: RemoteDevice | None, evaluator: ms.runner.EvaluatorConfig) -> ms.runner.Runner:
    if remote is None:
        runner = ms.runner.LocalRunner(
            evaluator_config=evaluator, timeout_sec=RUN_TIMEOUT_S, initializer=init_worker
        )
    else:
        config = ms.runner.RPCConfig(
            tracker_host=remote.host,
            tracker_port=remote.port,
            tracker_key=remote.key,
            session_timeout_sec=RUN_TIMEOUT_S * 4,
        )
        runner = ms.runner.RPCRunner(
            rpc_config=config, evaluator_config=evaluator, initializer=init_worker
        )
    end_with_the_run(recycled(runner.pool))
    return runner


class Stage(StrEnum):
    """Where a candidate's path ended: ``OK``, or the step that failed, in the order a candidate
    passes them. Datasets store a stage by its position (``code``), so new stages go last."""

    OK = "ok"
    APPLY = "apply"  # the trace does not replay on the workload (see ``transfer.apply``)
    BUILD = "build"
    VERIFY = "verify"  # outputs differ from the unscheduled kernel's, or the check crashed
    RUN = "run"

    @property
    def code(self) -> int:
        return list(Stage).index(self)


@dataclass(frozen=True)
class Failure:
    """Why a candidate has no time: the stage that failed and TVM's message."""

    stage: Stage
    message: str

    def __str__(self) -> str:
        return f"{self.stage}: {self.message}"


@dataclass(frozen=True)
class Measurement:
    """One candidate's outcome: ``run_s`` is the median of the repeats, in seconds."""

    run_s: float | None
    stage: Stage
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.stage is Stage.OK

    @property
    def failure(self) -> Failure | None:
        return None if self.ok else Failure(self.stage, self.error or "")


def arg_specs(mod: tvm.IRModule) -> tuple[list, list]:
    """The kernel's arguments: MetaSchedule's ``ArgInfo`` list (what runners take) and
    (shape, dtype) pairs (what the checker makes random arrays from)."""
    func = next(f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc))
    infos = ms.arg_info.ArgInfo.from_prim_func(func)
    specs = [(tuple(int(d) for d in info.shape), str(info.dtype)) for info in infos]
    return infos, specs


def remove_artifact(path: str | None) -> None:
    """Delete a build's temporary directory (each artifact gets its own)."""
    if path:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def measure(
    groups: list[tuple[tvm.IRModule, list[tvm.IRModule]]],
    target: tvm.target.Target,
    *,
    remote: RemoteDevice | None = None,
    timed: bool = True,
) -> list[list[Measurement]]:
    """Build, check and time scheduled kernels: one batch for all, as worker start-up is slow.

    ``groups`` pairs each unscheduled workload (the reference) with scheduled versions of it;
    the reference itself may be among them, to be timed. Only candidates whose outputs match
    their reference are timed (see ``verify``); with ``timed=False`` they are only checked
    (``ok`` with ``run_s`` None). Returns one list of measurements per group, in input order.
    """
    jobs = [(g, mod) for g, (_, mods) in enumerate(groups) for mod in mods]
    if not jobs:
        return [[] for _ in groups]
    specs = [arg_specs(reference) for reference, _ in groups]
    is_reference = [mod is groups[g][0] for g, mod in jobs]  # built once, never checked
    mods = [reference for reference, _ in groups]
    mods += [mod for (_, mod), ref in zip(jobs, is_reference) if not ref]
    built = build_all(mods, target, remote=remote)
    refs, scheduled = built[: len(groups)], iter(built[len(groups) :])
    cands = [refs[g] if ref else next(scheduled) for (g, _), ref in zip(jobs, is_reference)]
    results: list[Measurement | None] = [None] * len(jobs)
    try:
        for i, ((g, _), b) in enumerate(zip(jobs, cands)):
            if b.error_msg:
                results[i] = Measurement(None, Stage.BUILD, _short(b.error_msg))
            elif refs[g].error_msg:
                why = "the unscheduled workload does not build"
                results[i] = Measurement(None, Stage.BUILD, why)
        pending = [i for i, r in enumerate(results) if r is None and not is_reference[i]]
        checks = check_builds(
            [(cands[i].artifact_path, refs[jobs[i][0]].artifact_path) for i in pending],
            [specs[jobs[i][0]][1] for i in pending],
            remote=remote,
        )
        for i, check in zip(pending, checks):
            if not check.ok:
                results[i] = Measurement(None, Stage.VERIFY, check.error)
        pending = [i for i, r in enumerate(results) if r is None]
        if not timed:
            for i in pending:
                results[i] = Measurement(None, Stage.OK)
            pending = []
        for evaluator, references in ((EVALUATOR, False), (REFERENCE_EVALUATOR, True)):
            chosen = [i for i in pending if is_reference[i] == references]
            if not chosen:
                continue
            inputs = [
                ms.runner.RunnerInput(cands[i].artifact_path, "cpu", specs[jobs[i][0]][0])
                for i in chosen
            ]
            for i, timing in zip(chosen, _time(make_runner(remote, evaluator), inputs)):
                results[i] = timing
    finally:
        for b in built:
            remove_artifact(b.artifact_path)
    grouped: list[list[Measurement]] = [[] for _ in groups]
    for (g, _), result in zip(jobs, results):
        grouped[g].append(result)
    return grouped


def _time(runner: ms.runner.Runner, inputs: list[ms.runner.RunnerInput]) -> list[Measurement]:
    """Time each input, all done on return. Those that failed other than by a timeout are timed
    once more after the runner's worker is restarted: they passed the check, so a failure to
    run them is most likely the worker's (one whose every load failed ruined the rest of a
    dataset build, see ``workers.recycled``). A hung candidate is not timed twice."""
    timings = [_timing(future.result()) for future in runner.run(inputs)]
    again = [i for i, t in enumerate(timings) if t.stage is Stage.RUN and not _timed_out(t)]
    if again:
        logger.warning(
            "%d of %d candidates failed to run (%s); timing them again in a fresh worker",
            len(again), len(inputs), timings[again[0]].error,
        )  # fmt: skip
        restart_workers(runner.pool)
        for i, future in zip(again, runner.run([inputs[i] for i in again])):
            timings[i] = _timing(future.result())
    return timings


def _timed_out(timing: Measurement) -> bool:
    return "Timeout, killed after" in (timing.error or "")  # LocalRunner's and RPCRunner's words


def _timing(outcome: ms.runner.RunnerResult) -> Measurement:
    if outcome.error_msg or not outcome.run_secs:
        return Measurement(None, Stage.RUN, _short(outcome.error_msg or "no timing"))
    return Measurement(statistics.median(float(s) for s in outcome.run_secs), Stage.OK)


def _short(message: str) -> str:
    lines = [line for line in message.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else message)[:300]
