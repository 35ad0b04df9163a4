"""Contenders timed each in a worker of its own, in turn, stopped between their rounds: how the
kernel benchmark and the evaluation set TVM beside ONNX Runtime and PyTorch."""

import time

import psutil
import tvm
from tvm.script import tirx as T

from recommender.backend.measure import export_shared_library
from recommender.backend.workers import worker_pool
from recommender.evaluate import isolated
from recommender.evaluate.kernel_bench import library_timer


@T.prim_func(s_tir=True)
def scale(a: T.Buffer((256,), "float32"), b: T.Buffer((256,), "float32")):
    for i in range(256):
        with T.sblock("scale"):
            vi = T.axis.spatial(256, i)
            b[vi] = a[vi] * T.float32(2.0)


def worker_of(contender: str) -> psutil.Process:
    pool = worker_pool(f"timing-{contender}", 1, isolated.ROUND_TIMEOUT_S)
    [worker] = pool._worker_map.values()
    return psutil.Process(worker._proc.pid)


def settled_status(process: psutil.Process, within_s: float = 2.0) -> str:
    """The process's status once a signal sent to it has taken effect (it is asynchronous)."""
    deadline = time.monotonic() + within_s
    while process.status() != psutil.STATUS_STOPPED and time.monotonic() < deadline:
        time.sleep(0.05)
    return process.status()


def test_each_contender_runs_in_its_own_stopped_worker_and_a_failure_is_a_reason(target):
    library = export_shared_library(tvm.compile(tvm.IRModule({"main": scale}), target=target))
    specs = [((256,), "float32"), ((256,), "float32")]
    makers = {
        "tvm": (library_timer, (library, specs)),
        "again": (library_timer, (library, specs)),
        "missing": (library_timer, ("/nonexistent/kernel.so", specs)),
    }
    samples, failures = isolated.time_in_turn("scale", makers, rounds=2)
    assert set(samples) == {"tvm", "again"} and all(len(s) == 2 for s in samples.values())
    assert set(failures) == {"missing"} and "round failed" in failures["missing"]
    workers = [worker_of("tvm"), worker_of("again")]
    assert workers[0].pid != workers[1].pid
    assert [settled_status(w) for w in workers] == [psutil.STATUS_STOPPED] * 2  # between rounds
