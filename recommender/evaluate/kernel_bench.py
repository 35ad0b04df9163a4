"""The kernel-level ceiling: the zoo's heavy kernels, as TVM's schedules run them and as the
runtimes users deploy instead (ONNX Runtime, PyTorch eager) run the same operator.

Every schedule the recommender transfers is as good as its corpus's. Which kernels carry the
zoo's time, and how far their best corpus schedules are from ONNX Runtime's and PyTorch's, says
how high transfer can reach at best. Workloads are deduplicated across networks by structure
and taken heaviest first (by the corpus's tuned time x occurrences) until they hold ``share``
of the zoo's tuned time. Each is timed in rounds taken in turn, every contender in a worker
process of its own (``isolated``: in one process their thread pools slow each other down), by
TVM's ``time_evaluator`` rule (one warm-up, runs for at least 0.2 s; median of the rounds): as
the best record of every schedule database given (a corpus's logs, or a database tuned with
another configuration), and as the operator in ONNX Runtime and in PyTorch eager. A TVM
schedule is timed only after its output matches the unscheduled kernel on random inputs; one
that fails is reported with its reason.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tvm
from tvm import s_tir

from ..backend.measure import (
    arg_specs,
    build_without_intrin_import,
    export_shared_library,
    measure,
    remove_artifact,
    without_layout_rewrite,
)
from ..logs.sources import SourceSchedule, load_sources
from ..networks.zoo import load_zoo_network
from ..tasks.extract import Task, extract_tasks, structural_key, without_layout_free
from ..transfer.apply import apply_trace
from .isolated import Maker, time_in_turn
from .kernel_ops import RuntimeOp, onnxruntime_timer, runtime_op, torch_timer

ROUNDS = 5
NO_RECORD = "no record of this workload"


@dataclass
class HeavyWorkload:
    """One unique kernel of the zoo and where it occurs (``network/task xN``)."""

    key: int  # structural hash, as the logs key their workloads
    task: Task
    occurs: list[str] = field(default_factory=list)
    tuned_s: float = 0.0  # the corpus's best time x occurrences, summed over networks
    prepacked: Task | None = None  # the kernel with its weights layout-free (``layout_free``)

    def to_json(self, total_s: float) -> dict:
        return {
            "key": str(self.key),
            "kernel_class": self.task.kernel_class.summary,
            "anchor_extents": list(self.task.descriptor.anchor_extents),
            "bytes": self.task.descriptor.bytes,
            "occurs": self.occurs,
            "tuned_ms": self.tuned_s * 1e3,
            "share_of_zoo": self.tuned_s / total_s,
        }


def heavy_workloads(
    logs: dict[str, Path], target: tvm.target.Target, share: float, *, layout_free: bool = False
) -> tuple[list[HeavyWorkload], float]:
    """The unique workloads of the networks in ``logs`` holding ``share`` of their tuned time,
    heaviest first, and that total time (seconds per inference of every network, summed).
    With ``layout_free``, each also gets ``prepacked``: the same kernel as TVM's
    weight-prepacking pipeline extracts it (``extract_tasks(layout_free=True)``)."""
    best = _best_records(logs, target)
    unique: dict[int, HeavyWorkload] = {}
    prepacked: dict[int, Task] = {}
    for name in logs:
        network = load_zoo_network(name)
        if layout_free:
            for task in extract_tasks(network, target, layout_free=True):
                prepacked[int(structural_key(without_layout_free(task.mod)))] = task
        for task in extract_tasks(network, target):
            key = int(task.structural_key)
            record = best.get((name, key))
            if record is None:  # a task its own log has no valid record of
                continue
            heavy = unique.setdefault(key, HeavyWorkload(key, task, prepacked=prepacked.get(key)))
            heavy.occurs.append(f"{name}/{task.name} x{task.weight}")
            heavy.tuned_s += record.run_s * task.weight
    ranked = sorted(unique.values(), key=lambda h: -h.tuned_s)
    total = sum(h.tuned_s for h in ranked)
    chosen, covered = [], 0.0
    for heavy in ranked:
        if covered >= share * total:
            break
        chosen.append(heavy)
        covered += heavy.tuned_s
    return chosen, total


def _best_records(
    logs: dict[str, Path], target: tvm.target.Target
) -> dict[tuple[str, int], SourceSchedule]:
    """Each (network, workload)'s best record in that network's own log."""
    best = {}
    for source in load_sources(logs, target, top_n=1):
        best[(source.model, source.workload_key)] = source
    return best


def best_by_workload(logs: dict[str, Path], target: tvm.target.Target) -> dict[int, SourceSchedule]:
    """The fastest record of each workload over all of ``logs`` (a corpus: one log a network)."""
    best: dict[int, SourceSchedule] = {}
    for source in load_sources(logs, target, top_n=1):
        if source.workload_key not in best or source.run_s < best[source.workload_key].run_s:
            best[source.workload_key] = source
    return best


def library_timer(path: str, specs: list[tuple[tuple[int, ...], str]]) -> Callable[[], float]:
    """A timing round of a scheduled kernel's shared library on seeded random arguments."""
    runtime = tvm.runtime.load_module(path)
    rng = np.random.default_rng(0)
    args = [tvm.runtime.tensor(rng.standard_normal(shape).astype(dtype)) for shape, dtype in specs]
    evaluator = runtime.time_evaluator("main", tvm.cpu(), number=1, repeat=1, min_repeat_ms=200)
    return lambda: evaluator(*args).mean


def bench_workload(
    heavy: HeavyWorkload,
    databases: dict[str, dict[int, SourceSchedule]],
    target: tvm.target.Target,
    threads: int,
    onnx_dir: Path,
    rounds: int = ROUNDS,
) -> dict:
    """One workload timed as every database's best record and as the runtimes' operator, in
    interleaved rounds; milliseconds per variant, failures with their reasons. A database
    tuned with prepacked weights (``tune_kernels.py --prepack``) holds the ``prepacked``
    kernel."""
    variants, missing = {}, {}
    for name, records in databases.items():
        record = records.get(heavy.key)
        if record is not None:
            variants[name] = (heavy.task.mod, record.trace)
        elif heavy.prepacked is not None and int(heavy.prepacked.structural_key) in records:
            record = records[int(heavy.prepacked.structural_key)]
            variants[name] = (heavy.prepacked.mod, record.trace)
        else:
            missing[name] = NO_RECORD
    op = runtime_op(heavy.task.mod)
    row = time_variants(str(heavy.key), variants, op, target, threads, onnx_dir, rounds)
    row["failures"] = missing | row["failures"]
    return row


def time_variants(
    key: str,
    variants: dict[str, tuple[tvm.IRModule, s_tir.Trace]],
    op: RuntimeOp | None,
    target: tvm.target.Target,
    threads: int,
    onnx_dir: Path,
    rounds: int = ROUNDS,
) -> dict:
    """Each variant's trace applied to its own workload (one operator may be lowered to several
    kernels: another layout), checked against that workload unscheduled, then timed in
    interleaved rounds beside ``op`` in ONNX Runtime and PyTorch; milliseconds per variant,
    failures with their reasons. A schedule that rewrites its weight's layout is checked with
    the rewrite and timed without it, its weight prepacked as a built network passes it."""
    failures: dict[str, str] = {}
    scheduled: dict[str, tuple[tvm.IRModule, tvm.IRModule]] = {}
    for name, (mod, trace) in variants.items():
        applied = apply_trace(trace, mod, target)
        if applied.ok:
            scheduled[name] = (mod, applied.schedule.mod)
        else:
            failures[name] = f"does not apply: {applied.reason}"
    groups = [(mod, [schedule]) for mod, schedule in scheduled.values()]
    checked = measure(groups, target, timed=False)
    makers: dict[str, Maker] = {}
    libraries = []
    for (name, (_, schedule)), [outcome] in zip(scheduled.items(), checked):
        if not outcome.ok:
            failures[name] = f"{outcome.stage}: {outcome.error}"
            continue
        libraries.append(export_shared_library(build_without_intrin_import(schedule, target, None)))
        specs = arg_specs(without_layout_rewrite(schedule))[1]
        makers[name] = (library_timer, (libraries[-1], specs))
    if op is not None:
        makers["onnxruntime"] = (onnxruntime_timer, (op, threads, onnx_dir))
        makers["pytorch"] = (torch_timer, (op, threads))
    try:
        samples, failed = time_in_turn(key, makers, rounds)
    finally:
        for library in libraries:
            remove_artifact(library)
    return {
        "op": None if op is None else _op_json(op),
        "flops": op.flops if op is not None and op.flops else None,
        "ms": {name: statistics.median(s) * 1e3 for name, s in samples.items()},
        "failures": failures | failed,
        "rounds": rounds,
    }


def _op_json(op: RuntimeOp) -> dict:
    return {"kind": op.kind, "shapes": [list(s) for s in op.shapes], **dict(op.attrs)}


def gflops(row: dict) -> dict[str, float]:
    """GFLOP/s of each variant of a benchmarked workload (none for softmax and GELU)."""
    if not row["flops"]:
        return {}
    return {name: row["flops"] / (ms * 1e-3) / 1e9 for name, ms in row["ms"].items()}


def ratio_to(rows: list[dict], variant: str, reference: str) -> Iterator[float]:
    """The speed of ``variant`` as a fraction of ``reference``'s (time ratio), in every row
    timing both."""
    for row in rows:
        ms = row["ms"]
        if variant in ms and reference in ms:
            yield ms[reference] / ms[variant]


def geomean(values: list[float]) -> float | None:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None
