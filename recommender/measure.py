"""Build and time candidates through MetaSchedule's builder and runner (local or RPC).

Timing protocol (fixed, so numbers from collection, transfer and recommendation compare):
one warm-up run, then ``repeat`` = 3 measurements of ``number`` = 3 runs each, each repeat at
least ``min_repeat_ms`` = 50 ms long; a candidate's time is the median of the repeats. Builds
and runs happen in separate worker processes, so a candidate that crashes or hangs is a failed
result, never a dead run.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import tempfile
from dataclasses import dataclass

import tvm
from tvm.s_tir import meta_schedule as ms

from .targets import RemoteDevice
from .verify import check_builds

EVALUATOR = ms.runner.EvaluatorConfig(
    number=3, repeat=3, min_repeat_ms=50, enable_cpu_cache_flush=False
)
BUILD_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 30.0


def build_without_intrin_import(mod, target, _params):
    """MetaSchedule's ``default_build`` minus ``import tvm.s_tir.tensor_intrin``.

    That import registers CUDA and other tensor intrinsics and takes 20-27 s in every fresh
    builder worker (the pool restarts each batch), so builds under the default 30 s timeout
    failed at random. Lowering an already scheduled CPU kernel does not need it.
    """
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def export_shared_library(mod) -> str:
    """Link once, in the builder worker: MetaSchedule's default exports a ``.tar`` of objects,
    which the checker and the runner each link again when they load it."""
    path = os.path.join(tempfile.mkdtemp(), "tvm_tmp_mod.so")
    mod.export_library(path)
    return path


@functools.cache
def make_builder(
    max_workers: int | None = None, *, remote: RemoteDevice | None = None
) -> ms.builder.LocalBuilder:
    """Builds for this host are linked shared libraries; for an RPC device, object archives
    that the device links itself (it may be another architecture).

    Cached: constructing a MetaSchedule builder or runner spawns a worker for a sanity check,
    about 5.5 s each here, which was a third of the cost of timing a batch of 32.
    """
    return ms.builder.LocalBuilder(
        max_workers=max_workers,
        timeout_sec=BUILD_TIMEOUT_S,
        f_build=build_without_intrin_import,
        f_export=None if remote is not None else export_shared_library,
    )


@functools.cache
def make_runner(remote: RemoteDevice | None = None) -> ms.runner.Runner:
    """A local runner, or an RPC runner that asks the tracker for a device with ``remote.key``."""
    if remote is None:
        return ms.runner.LocalRunner(evaluator_config=EVALUATOR, timeout_sec=RUN_TIMEOUT_S)
    config = ms.runner.RPCConfig(
        tracker_host=remote.host,
        tracker_port=remote.port,
        tracker_key=remote.key,
        session_timeout_sec=RUN_TIMEOUT_S * 4,
    )
    return ms.runner.RPCRunner(rpc_config=config, evaluator_config=EVALUATOR)


@dataclass(frozen=True)
class Measurement:
    """One candidate's outcome: ``run_s`` is the median of the repeats, in seconds."""

    run_s: float | None
    stage: str  # "ok", or where it failed: "build", "verify", "run"
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.stage == "ok"


def _arg_specs(mod: tvm.IRModule) -> tuple[list, list]:
    func = next(f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc))
    infos = ms.arg_info.ArgInfo.from_prim_func(func)
    specs = [(tuple(int(d) for d in info.shape), str(info.dtype)) for info in infos]
    return infos, specs


def _remove_artifact(path: str | None) -> None:
    if path:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def measure(
    groups: list[tuple[tvm.IRModule, list[tvm.IRModule]]],
    target: tvm.target.Target,
    *,
    remote: RemoteDevice | None = None,
    builder: ms.builder.Builder | None = None,
    runner: ms.runner.Runner | None = None,
    timed: bool = True,
) -> list[list[Measurement]]:
    """Build, check and time scheduled kernels: one batch for all, as worker start-up is slow.

    ``groups`` pairs each unscheduled workload (the reference) with scheduled versions of it.
    Only candidates whose outputs match their reference are timed (see ``verify``); with
    ``timed=False`` they are only checked (``ok`` with ``run_s`` None). Returns one list of
    measurements per group, in input order.
    """
    jobs = [(g, mod) for g, (_, mods) in enumerate(groups) for mod in mods]
    if not jobs:
        return [[] for _ in groups]
    builder = builder or make_builder(remote=remote)
    if timed:
        runner = runner or make_runner(remote)
    specs = [_arg_specs(reference) for reference, _ in groups]
    mods = [reference for reference, _ in groups] + [mod for _, mod in jobs]
    built = builder.build([ms.builder.BuilderInput(mod, target) for mod in mods])
    refs, cands = built[: len(groups)], built[len(groups) :]
    results: list[Measurement | None] = [None] * len(jobs)
    try:
        for i, ((g, _), b) in enumerate(zip(jobs, cands)):
            if b.error_msg:
                results[i] = Measurement(None, "build", _short(b.error_msg))
            elif refs[g].error_msg:
                results[i] = Measurement(None, "build", "the unscheduled workload does not build")
        pending = [i for i, r in enumerate(results) if r is None]
        checks = check_builds(
            [(cands[i].artifact_path, refs[jobs[i][0]].artifact_path) for i in pending],
            [specs[jobs[i][0]][1] for i in pending],
            remote=remote,
        )
        for i, check in zip(pending, checks):
            if not check.ok:
                results[i] = Measurement(None, "verify", check.error)
        pending = [i for i, r in enumerate(results) if r is None]
        if not timed:
            for i in pending:
                results[i] = Measurement(None, "ok")
            pending = []
        futures = (
            []
            if not pending
            else runner.run(
                [
                    ms.runner.RunnerInput(cands[i].artifact_path, "cpu", specs[jobs[i][0]][0])
                    for i in pending
                ]
            )
        )
        for i, future in zip(pending, futures):
            outcome = future.result()
            if outcome.error_msg or not outcome.run_secs:
                results[i] = Measurement(None, "run", _short(outcome.error_msg or "no timing"))
            else:
                secs = [float(s) for s in outcome.run_secs]
                results[i] = Measurement(statistics.median(secs), "ok")
    finally:
        for b in built:
            _remove_artifact(b.artifact_path)
    grouped: list[list[Measurement]] = [[] for _ in groups]
    for (g, _), result in zip(jobs, results):
        grouped[g].append(result)
    return grouped


def _short(message: str) -> str:
    lines = [line for line in message.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else message)[:300]
