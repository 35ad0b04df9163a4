"""Features of a candidate (source schedule applied to a target kernel), schema version 2.

No measurement is needed: everything comes from the target workload, the source record, the
pair, and the transferred program (MetaSchedule's per-store features). Field by field:

workload (target kernel)
  w_log_flops, w_log_bytes, w_log_intensity  log2 of FLOPs, parameter bytes, FLOPs per byte
  w_blocks, w_reduction_loops               number of blocks; reduction axes of the anchor
  w_log_extent_0..7                        log2 of the anchor block's extents (0 = absent)
source (the record on its home workload)
  s_log_run_us, s_log_gflops                its measured time (log2 us) and throughput
  s_rank                                    0 = best record of its workload
  s_tiles, s_log_inner_tile, s_log_outer_tile  tile decisions and mean log2 inner/outer factor
  s_unroll                                  the sampled max unroll step (0 if none)
  s_compute_location                        the sampled compute-at position (-1 if none)
pair
  p_log_flops_ratio                         log2 of target FLOPs / source FLOPs
  p_log_extent_ratio_0..7                   log2 of target / source anchor extents
  p_repaired_tiles, p_repaired_fraction      tile decisions that no longer divided
  p_same_family, p_same_workload            model family match; identical shapes
program (the transferred schedule, PerStoreFeature's 164 numbers per buffer store)
  t_mean_0..163, t_max_0..163               mean and max over the program's stores
level (schema 2; last, so that schema-1 rows, all exact, extend with zeros)
  l_anchor                                  1 if applied at the anchor level, 0 if exact
  l_epilogue_added, l_epilogue_missing      the target's epilogue op kinds the source lacks,
                                            and the source's the target lacks
  l_pad_differs                             one of the two has a pad block, the other not

Derived by the ranker from the stored columns (``with_derived``; datasets do not store them):
  d_shape_distance                          summed |p_log_extent_ratio_*|: the nearest-shape
                                            rule's signal, as a feature
Relative to the other candidates of the same kernel (``relative_to_kernel``; rankers with
``relative``): a tree sees each row alone, and "fastest at home among this kernel's sources"
is a fact about the group
  r_gflops_below_best, r_gflops_rank        s_log_gflops below the kernel's best; its rank
  r_distance_above_nearest, r_distance_rank  d_shape_distance above the kernel's nearest; rank
  r_repaired_above_least, r_repaired_rank    p_repaired_fraction above the kernel's least; rank
                                            (ranks in [0, 1], 0 = best of the kernel)
"""

from __future__ import annotations

import math

import numpy as np
import tvm
from tvm.s_tir import meta_schedule as ms

from ..backend.fixes import tune_context
from ..logs.sources import SourceSchedule
from ..tasks.extract import Task
from ..tasks.workload import WorkloadDescriptor, epilogue_ops
from ..transfer.apply import Applied, Level

SCHEMA_VERSION = 2
EXTENT_SLOTS = 8
STORE_FEATURES = 164

_WORKLOAD = ["w_log_flops", "w_log_bytes", "w_log_intensity", "w_blocks", "w_reduction_loops"]
_WORKLOAD += [f"w_log_extent_{i}" for i in range(EXTENT_SLOTS)]
_SOURCE = [
    "s_log_run_us",
    "s_log_gflops",
    "s_rank",
    "s_tiles",
    "s_log_inner_tile",
    "s_log_outer_tile",
    "s_unroll",
    "s_compute_location",
]
_PAIR = ["p_log_flops_ratio"] + [f"p_log_extent_ratio_{i}" for i in range(EXTENT_SLOTS)]
_PAIR += ["p_repaired_tiles", "p_repaired_fraction", "p_same_family", "p_same_workload"]
_PROGRAM = [f"t_mean_{i}" for i in range(STORE_FEATURES)]
_PROGRAM += [f"t_max_{i}" for i in range(STORE_FEATURES)]
_LEVEL = ["l_anchor", "l_epilogue_added", "l_epilogue_missing", "l_pad_differs"]
FEATURE_NAMES: tuple[str, ...] = tuple(_WORKLOAD + _SOURCE + _PAIR + _PROGRAM + _LEVEL)
DERIVED_NAMES: tuple[str, ...] = ("d_shape_distance",)
RELATIVE_NAMES: tuple[str, ...] = (
    "r_gflops_below_best",
    "r_gflops_rank",
    "r_distance_above_nearest",
    "r_distance_rank",
    "r_repaired_above_least",
    "r_repaired_rank",
)
# known before any trace is decoded or applied: what the first stage of ranking screens by
_NEEDS_APPLY = {*_SOURCE[3:], "p_repaired_tiles", "p_repaired_fraction", *_PROGRAM}
SCREEN_COLUMNS = np.array([i for i, n in enumerate(FEATURE_NAMES) if n not in _NEEDS_APPLY])
_EXTENT_RATIOS = [FEATURE_NAMES.index(f"p_log_extent_ratio_{i}") for i in range(EXTENT_SLOTS)]


def shape_distance(X: np.ndarray) -> np.ndarray:
    """How far each candidate's source shape is from its target's: summed |log2| extent ratios."""
    return np.abs(X[:, _EXTENT_RATIOS]).sum(axis=1)


def with_derived(X: np.ndarray) -> np.ndarray:
    """``X`` with the ``DERIVED_NAMES`` columns appended. A tree learns a sum of a dozen columns
    poorly; given as one, leave-one-model-out top-1 rose 0.776 -> 0.822 (EPYC corpus) and
    0.874 -> 0.913 (Xeon corpus; docs/results/rankers_*.json)."""
    return np.hstack([X, shape_distance(X)[:, None]])


def relative_to_kernel(X: np.ndarray, qid: np.ndarray | None = None) -> np.ndarray:
    """The ``RELATIVE_NAMES`` columns of ``X`` (stored columns), one kernel per ``qid`` value
    (None: all rows are one kernel's): each signal's distance from the kernel's best value and
    its rank among the kernel's candidates, ties sharing the better rank."""
    signals = np.column_stack(
        [
            -X[:, FEATURE_NAMES.index("s_log_gflops")],  # lower is better for all three
            shape_distance(X),
            X[:, FEATURE_NAMES.index("p_repaired_fraction")],
        ]
    )
    qid = np.zeros(len(X), dtype=int) if qid is None else np.asarray(qid)
    out = np.zeros((len(X), 2 * signals.shape[1]))
    for group in np.unique(qid):
        rows = np.flatnonzero(qid == group)
        values = signals[rows]
        ranks = (values[None, :, :] < values[:, None, :]).sum(axis=1)
        out[rows, 0::2] = values - values.min(axis=0)
        out[rows, 1::2] = ranks / max(len(rows) - 1, 1)
    return out


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else 0.0


def _extents(desc: WorkloadDescriptor) -> list[float]:
    logs = [_log2(e) for e in desc.anchor_extents[:EXTENT_SLOTS]]
    return logs + [0.0] * (EXTENT_SLOTS - len(logs))


def workload_features(desc: WorkloadDescriptor) -> list[float]:
    return [
        _log2(desc.flops + 1),
        _log2(desc.bytes + 1),
        _log2(desc.arithmetic_intensity + 1e-3),
        float(len(desc.blocks)),
        float(desc.anchor_iter_kinds.count("R")),
        *_extents(desc),
    ]


def home_features(source: SourceSchedule) -> list[float]:
    """The source record's time, throughput and rank at home (no trace decoded)."""
    return [
        _log2(source.run_s * 1e6),
        _log2(source.descriptor.flops / source.run_s / 1e9 + 1e-3),
        float(source.rank),
    ]


def source_features(source: SourceSchedule) -> list[float]:
    inner, outer, unroll, location = [], [], 0.0, -1.0
    for inst, decision in source.trace.decisions.items():
        kind = inst.kind.name
        if kind == "SamplePerfectTile":
            factors = [int(f) for f in decision]
            inner.append(_log2(factors[-1]))
            outer.append(_log2(factors[0]))
        elif kind == "SampleCategorical":
            candidates = inst.attrs[0]
            unroll = float(int(candidates[int(decision)]))
        elif kind == "SampleComputeLocation":
            location = float(int(decision))
    return [
        *home_features(source),
        float(len(inner)),
        float(np.mean(inner)) if inner else 0.0,
        float(np.mean(outer)) if outer else 0.0,
        unroll,
        location,
    ]


def _shape_pair(
    source: SourceSchedule, target: WorkloadDescriptor, same_family: bool
) -> tuple[list[float], list[float]]:
    """The pair's FLOPs and extent ratios, and its family and shape matches."""
    ratios = [t - s for t, s in zip(_extents(target), _extents(source.descriptor))]
    flops = _log2(target.flops + 1) - _log2(source.descriptor.flops + 1)
    same = [float(same_family), float(target.anchor_extents == source.descriptor.anchor_extents)]
    return [flops, *ratios], same


def pair_features(
    source: SourceSchedule, target: WorkloadDescriptor, applied: Applied, same_family: bool
) -> list[float]:
    ratios, same = _shape_pair(source, target, same_family)
    repaired = [
        float(applied.repaired_tiles),
        applied.repaired_tiles / max(applied.tile_decisions, 1),
    ]
    return ratios + repaired + same


def level_features(source: SourceSchedule, target: WorkloadDescriptor, level: Level) -> list[float]:
    """What an anchor-level transfer changes: the epilogue and the pad TVM schedules itself."""
    theirs, ours = epilogue_ops(source.descriptor), epilogue_ops(target)
    pads = ["pad_temp" in (b.name for b in d.blocks) for d in (source.descriptor, target)]
    return [
        float(level is Level.ANCHOR),
        float(len(ours - theirs)),
        float(len(theirs - ours)),
        float(pads[0] != pads[1]),
    ]


def program_features(task: Task, schedules: list, target: tvm.target.Target) -> np.ndarray:
    """Mean and max of PerStoreFeature over each schedule's stores: shape (n, 2 x 164)."""
    return store_features(task.mod, schedules, target)


def store_features(mod: tvm.IRModule, schedules: list, target: tvm.target.Target) -> np.ndarray:
    """``program_features`` of schedules of the workload ``mod``: one function, so that a
    corpus record featurised at home (``throughput_baseline``) is described as a candidate is."""
    if not schedules:
        return np.zeros((0, 2 * STORE_FEATURES))
    context = tune_context(mod=mod, target=target)
    func = next(iter(mod.functions.values()))
    args = ms.arg_info.ArgInfo.from_prim_func(func)
    candidates = [ms.MeasureCandidate(sch, args) for sch in schedules]
    per_store = ms.feature_extractor.PerStoreFeature().extract_from(context, candidates)
    rows = []
    for tensor in per_store:
        stores = tensor.numpy()
        if stores.size == 0:
            rows.append(np.zeros(2 * STORE_FEATURES))
        else:
            rows.append(np.concatenate([stores.mean(axis=0), stores.max(axis=0)]))
    return np.asarray(rows)


def featurize(
    task: Task,
    candidates: list[tuple[SourceSchedule, Applied, Level]],
    target: tvm.target.Target,
    *,
    family_of: dict[str, str] | None = None,
    target_family: str = "",
) -> np.ndarray:
    """The feature matrix of one kernel's applied candidates: shape (n, len(FEATURE_NAMES)).

    Failed applications have no program: they are not featurised (callers drop them first).
    """
    if any(not applied.ok for _, applied, _ in candidates):
        raise ValueError("featurize() takes successfully applied candidates only")
    family_of = family_of or {}
    workload = workload_features(task.descriptor)
    program = program_features(task, [a.schedule for _, a, _ in candidates], target)
    rows = []
    for (source, applied, level), prog in zip(candidates, program):
        same = bool(target_family) and family_of.get(source.model) == target_family
        rows.append(
            workload
            + source_features(source)
            + pair_features(source, task.descriptor, applied, same)
            + list(prog)
            + level_features(source, task.descriptor, level)
        )
    matrix = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURE_NAMES))
    return np.nan_to_num(matrix, nan=0.0, posinf=0.0, neginf=0.0)


def screen_matrix(
    task: Task,
    candidates: list[tuple[SourceSchedule, Level]],
    *,
    family_of: dict[str, str] | None = None,
    target_family: str = "",
) -> np.ndarray:
    """Rows of ``featurize``'s width with only the ``SCREEN_COLUMNS`` filled (the rest zero):
    what is known of a candidate before it is applied, for the first stage of ranking."""
    family_of = family_of or {}
    workload = workload_features(task.descriptor)
    X = np.zeros((len(candidates), len(FEATURE_NAMES)))
    for i, (source, level) in enumerate(candidates):
        same = bool(target_family) and family_of.get(source.model) == target_family
        ratios, matches = _shape_pair(source, task.descriptor, same)
        level_row = level_features(source, task.descriptor, level)
        X[i, SCREEN_COLUMNS] = workload + home_features(source) + ratios + matches + level_row
    return np.nan_to_num(X, nan=0.0, posinf=0.0, neginf=0.0)
