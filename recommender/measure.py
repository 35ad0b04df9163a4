"""Build and time candidates through MetaSchedule's builder and runner (local or RPC).

Timing protocol (fixed, so numbers from collection, transfer and recommendation compare):
one warm-up run, then ``repeat`` = 3 measurements of ``number`` = 3 runs each, each repeat at
least ``min_repeat_ms`` = 50 ms long; a candidate's time is the median of the repeats. Builds
and runs happen in separate worker processes, so a candidate that crashes or hangs is a failed
result, never a dead run.
"""

from __future__ import annotations

from tvm.s_tir import meta_schedule as ms

from .targets import RemoteDevice

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


def make_builder(max_workers: int | None = None) -> ms.builder.LocalBuilder:
    return ms.builder.LocalBuilder(
        max_workers=max_workers,
        timeout_sec=BUILD_TIMEOUT_S,
        f_build=build_without_intrin_import,
    )


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
