"""Apply a source schedule (a MetaSchedule trace) to a target workload, at one of two levels;
or, where no source reaches a kernel, sample MetaSchedule's own design space for it.

``exact``: the source has the target's kernel class. The trace is replayed without its
postprocessing instructions, then the target's own postprocessors run (full replay fails on
some shapes; see docs/tvm.md).

``anchor``: only the anchor blocks agree (the convolution or matmul; pad and epilogue differ).
TVM's ``schedule_using_anchor_trace`` replays the trace's steps on the blocks it names and
schedules the rest itself: elementwise epilogues are inlined into the anchor's output, one
leftover block is fused and parallelised. The trace is simplified first (dead look-ups of
source blocks break the replay when the epilogue differs); without its postprocessing steps,
then the target's postprocessors, else with them, as TVM's own database pass applies it.

Blocks the trace gets by a name that differs from the target's only in the model's variable name
(``lv88_red`` vs ``lv114_red``, one kernel class) are renamed to the target's first.

``default`` (``design_space``): no source; one sample of each of MetaSchedule's design spaces
for the kernel itself, postprocessed. The last resort of a kernel no source reaches.

Tile decisions that no longer divide the new extents are repaired by TVM, inner factors first;
we count them, since a repaired schedule is less likely to keep its home performance. A failure
is data: the reason is returned, never raised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import tvm
import tvm_ffi
from tvm import s_tir
from tvm.s_tir.meta_schedule.trace_apply import schedule_using_anchor_trace

from ..backend.fixes import tune_context
from ..core.interrupts import ctrl_c_stops_gently
from ..tasks.workload import block_class_name, blocks_of


class Level(StrEnum):
    """How much of the source kernel's structure the target shares."""

    EXACT = "exact"  # the whole fused kernel: the full trace replays
    ANCHOR = "anchor"  # the anchor block alone: TVM schedules pad and epilogue
    DEFAULT = "default"  # no source: a sample of MetaSchedule's own design space for the kernel


@dataclass(frozen=True)
class Applied:
    """The outcome of one application: a schedule, or the reason there is none."""

    schedule: s_tir.Schedule | None
    reason: str | None
    repaired_tiles: int
    tile_decisions: int

    @property
    def ok(self) -> bool:
        return self.schedule is not None


_POSTPROCS: dict[tuple[str, int], tuple] = {}


def _postprocs(mod: tvm.IRModule, target: tvm.target.Target) -> tuple:
    """The target's postprocessors, initialised on the workload as MetaSchedule does."""
    key = (str(target), tvm_ffi.structural_hash(mod))
    if key not in _POSTPROCS:
        context = tune_context(mod=mod, target=target, space_generator="post-order-apply")
        _POSTPROCS[key] = tuple(context.space_generator.postprocs)
    return _POSTPROCS[key]


def _postprocess(sch: s_tir.Schedule, mod: tvm.IRModule, target: tvm.target.Target) -> str | None:
    """Run the target's postprocessors, marked as MetaSchedule marks them: its search replays
    database traces without the postprocessing and mutates them, and unmarked postproc steps
    would no longer fit. Returns why a postprocessor rejected the schedule, if one did."""
    sch.enter_postproc()
    for postproc in _postprocs(mod, target):
        if not postproc.apply(sch):
            return f"postprocessor {type(postproc).__name__} rejected the schedule"
    return None


_SPACES: dict[tuple[str, int], tuple[Applied, ...]] = {}


def design_space(mod: tvm.IRModule, target: tvm.target.Target) -> tuple[Applied, ...]:
    """One postprocessed sample of each of MetaSchedule's design spaces for ``mod`` (fixed
    seed): the schedules a kernel no source reaches can still have. For an elementwise or
    normalisation kernel that is inlining, parallel outer loops and vector inner ones, the
    most of what tuning gains there; naive loops run on one core. Kept per workload."""
    key = (str(target), tvm_ffi.structural_hash(mod))
    if key not in _SPACES:
        context = tune_context(
            mod=mod, target=target, space_generator="post-order-apply", rand_state=1
        )
        applied = []
        for sch in context.space_generator.generate_design_space(mod):
            try:
                reason = _postprocess(sch, mod, target)
            except (RuntimeError, ValueError, TypeError) as err:
                reason = _first_line(err)
            applied.append(Applied(None if reason else sch, reason, 0, len(_tiles(sch.trace))))
        _SPACES[key] = tuple(applied)
    return _SPACES[key]


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    lines = [line for line in text if line.strip() and not line.startswith(("Traceback", "  "))]
    line = lines[-1] if lines else type(err).__name__
    return line.removeprefix("Error message: ")[:300]


def _tiles(trace: s_tir.Trace) -> list[tuple[int, ...]]:
    """The trace's tile decisions, in program order."""
    decisions = trace.decisions
    return [
        tuple(int(f) for f in decisions[inst])
        for inst in trace.insts
        if inst.kind.name == "SamplePerfectTile" and inst in decisions
    ]


def apply_trace(
    trace: s_tir.Trace,
    target_mod: tvm.IRModule,
    target: tvm.target.Target,
    *,
    level: Level = Level.EXACT,
    seed: int = 1,
) -> Applied:
    """Apply ``trace`` to ``target_mod`` at ``level`` and postprocess for ``target``.

    Examples
    --------
    >>> applied = apply_trace(record.trace, task.mod, target)
    >>> applied.ok, applied.reason, applied.repaired_tiles
    """
    trace = _with_target_block_names(trace, target_mod)
    if level is Level.EXACT:
        sch, reason, repaired, tiles = _replay(trace, target_mod, target, seed)
    else:
        sch, reason, repaired, tiles = _anchor(trace, target_mod, target, seed)
    return Applied(
        schedule=None if reason else sch,
        reason=reason,
        repaired_tiles=repaired,
        tile_decisions=tiles,
    )


def _with_target_block_names(trace: s_tir.Trace, target_mod: tvm.IRModule) -> s_tir.Trace:
    """``trace`` getting the target's blocks by their own names where the two differ only in
    the model's variable name (``workload.block_class_name``); unchanged otherwise."""
    gets = [str(i.attrs[0]) for i in trace.insts if i.kind.name == "GetSBlock"]
    if all(block_class_name(name) == name for name in gets):  # no model variable: as it is
        return trace
    names = {b.name for b in blocks_of(target_mod)}
    by_class: dict[str, list[str]] = {}
    for name in names:
        by_class.setdefault(block_class_name(name), []).append(name)
    insts, renamed = [], False
    for inst in trace.insts:
        if inst.kind.name == "GetSBlock" and str(inst.attrs[0]) not in names:
            same_class = by_class.get(block_class_name(str(inst.attrs[0])), [])
            if len(same_class) == 1:
                attrs = [same_class[0], *inst.attrs[1:]]
                inst = s_tir.schedule.Instruction(inst.kind, inst.inputs, attrs, inst.outputs)
                renamed = True
        insts.append(inst)
    return s_tir.Trace(insts, dict(trace.decisions)) if renamed else trace


def _replay(trace, target_mod, target, seed) -> tuple[s_tir.Schedule, str | None, int, int]:
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
        reason = _postprocess(sch, target_mod, target)
    except (RuntimeError, ValueError, TypeError) as err:  # TVM raises RuntimeError subclasses
        reason = _first_line(err)
    return sch, reason, counts["repaired"], counts["tiles"]


def _anchor(trace, target_mod, target, seed) -> tuple[s_tir.Schedule, str | None, int, int]:
    source_tiles = _tiles(trace)
    if s_tir.analysis.find_anchor_sblock(target_mod) is None:  # TVM would skip every step
        return s_tir.Schedule(target_mod), "the kernel has no anchor block", 0, len(source_tiles)
    reasons = []
    for remove_postproc in (True, False):  # fresh postprocessors first, the record's own else
        sch = s_tir.Schedule(target_mod, seed=seed)
        try:
            with ctrl_c_stops_gently():
                schedule_using_anchor_trace(
                    sch, trace.simplified(remove_postproc=remove_postproc), target
                )
            reason = _postprocess(sch, target_mod, target) if remove_postproc else None
        except (RuntimeError, ValueError, TypeError) as err:
            reason = _first_line(err)
        if reason is None:
            tiles = _tiles(sch.trace)
            repaired = sum(a != b for a, b in zip(source_tiles, tiles))
            return sch, None, repaired, len(tiles)
        reasons.append(reason)
    return sch, " / ".join(dict.fromkeys(reasons)), 0, len(source_tiles)
