"""Apply a source schedule (a MetaSchedule trace) to a target workload of the same kernel class.

The trace is replayed without its postprocessing instructions, then the target's own
postprocessors run (full replay fails on some shapes; see docs/tvm.md). Tile decisions that no
longer divide the new extents are repaired by TVM, inner factors first; we count them, since a
repaired schedule is less likely to keep its home performance. A failure is data: the reason is
returned, never raised.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import s_tir
from tvm.s_tir import meta_schedule as ms

from ..core.interrupts import ctrl_c_stops_gently
from ..tasks.extract import register_cpu_tensor_intrinsics

register_cpu_tensor_intrinsics()


@dataclass(frozen=True)
class Applied:
    """The outcome of one application: a schedule, or the reason there is none."""

    schedule: s_tir.Schedule | None
    reason: str | None
    repaired_tiles: int
    tile_decisions: int
    apply_s: float

    @property
    def ok(self) -> bool:
        return self.schedule is not None


_POSTPROCS: dict[tuple[str, int], tuple] = {}


def _postprocs(mod: tvm.IRModule, target: tvm.target.Target) -> tuple:
    """The target's postprocessors, initialised on the workload as MetaSchedule does."""
    key = (str(target), tvm_ffi.structural_hash(mod))
    if key not in _POSTPROCS:
        context = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply")
        _POSTPROCS[key] = tuple(context.space_generator.postprocs)
    return _POSTPROCS[key]


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    lines = [line for line in text if line.strip() and not line.startswith(("Traceback", "  "))]
    line = lines[-1] if lines else type(err).__name__
    return line.removeprefix("Error message: ")[:300]


def apply_trace(
    trace: s_tir.Trace, target_mod: tvm.IRModule, target: tvm.target.Target, *, seed: int = 1
) -> Applied:
    """Replay ``trace`` on ``target_mod`` and postprocess for ``target``.

    Examples
    --------
    >>> applied = apply_trace(record.trace, task.mod, target)
    >>> applied.ok, applied.reason, applied.repaired_tiles
    """
    start = time.perf_counter()
    counts = {"repaired": 0, "tiles": 0}

    def count_repairs(inst, inputs, _attrs, decision):
        if inst.kind.name == "SamplePerfectTile" and decision is not None:
            counts["tiles"] += 1
            extent = sch.get(inputs[0]).extent
            if math.prod(int(f) for f in decision) != int(extent):
                counts["repaired"] += 1
        return decision

    sch = s_tir.Schedule(target_mod, seed=seed)
    reason = None
    try:
        with ctrl_c_stops_gently():  # a Ctrl-C in the callback is no failure
            trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=count_repairs)
        # Marked as MetaSchedule marks it: its search replays database traces without the
        # postprocessing and mutates them, and unmarked postproc steps would no longer fit.
        sch.enter_postproc()
        for postproc in _postprocs(target_mod, target):
            if not postproc.apply(sch):
                reason = f"postprocessor {type(postproc).__name__} rejected the schedule"
                break
    except (RuntimeError, ValueError, TypeError) as err:  # TVM raises RuntimeError subclasses
        reason = _first_line(err)
    return Applied(
        schedule=None if reason else sch,
        reason=reason,
        repaired_tiles=counts["repaired"],
        tile_decisions=counts["tiles"],
        apply_s=time.perf_counter() - start,
    )
