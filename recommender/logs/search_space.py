"""Named MetaSchedule search spaces for CPU tuning: the default and variants of its x86 settings.

MetaSchedule's default CPU space tiles every reduction ``SSRSRS`` with inner tiles up to 64,
parallelises up to 16 jobs per core, vectorises up to 64 lanes and unrolls up to 512 steps
(``ScheduleRule.create("llvm")``), and leaves a float32 kernel's inner loops to LLVM's
vectoriser. The ``VARIANTS`` change one of those settings; the ``INTRINSIC_VARIANTS`` add a
tiling around a float32 AVX-512 micro-kernel (``backend.fp32_intrinsics``) before the default
tiling, which still takes every block the micro-kernel does not fit. A benchmark of kernels
tuned in each (``scripts/tune_kernels.py --space``) says which pays on this CPU. A log records
its space in its provenance; records of two spaces are kept in separate logs
(``TuningLog.create_or_resume``).
"""

from __future__ import annotations

import tvm
from tvm import te
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.schedule_rule import ReuseType
from tvm.tirx import IterVar

from ..backend import fp32_intrinsics
from ..core.errors import InputError

DEFAULT = "default"

# name: (what it changes, the rule it replaces, that rule's settings changed from the default's)
VARIANTS: dict[str, tuple[str, str, dict]] = {
    "tile16": (
        "inner tiles of at most 16 (one AVX-512 register of fp32) instead of 64",
        "MultiLevelTiling",
        {"max_innermost_factor": 16},
    ),
    "jobs4": (
        "at most 4 parallel jobs per core instead of 16 (coarser threads)",
        "ParallelizeVectorizeUnroll",
        {"max_jobs_per_core": 4},
    ),
    "vector16": (
        "vectorise at most 16 lanes instead of 64",
        "ParallelizeVectorizeUnroll",
        {"max_vectorize_extent": 16},
    ),
    "unroll-deep": (
        "unroll up to 1024 steps (0, 64, 256, 1024) instead of (0, 16, 64, 512)",
        "ParallelizeVectorizeUnroll",
        {"unroll_max_steps": [0, 64, 256, 1024]},
    ),
}


# name: (what it adds, the intrinsic, whether convolutions get their input channels innermost)
INTRINSIC_VARIANTS: dict[str, tuple[str, str, bool]] = {
    "fma16": (
        "tiling around a 16-lane broadcast FMA (the output channels' or columns' axis)",
        fp32_intrinsics.FMA16,
        False,
    ),
    "micro7x16": (
        "tiling around a 7x16 register-blocked micro-kernel over 16 input channels",
        fp32_intrinsics.MICRO,
        True,
    ),
}


def names() -> list[str]:
    return [DEFAULT, *VARIANTS, *INTRINSIC_VARIANTS]


def check(name: str) -> str:
    """``name`` if it names a space; else an error listing them."""
    if name not in names():
        raise InputError(f"unknown search space {name!r}; choose one of: {', '.join(names())}")
    return name


def space_generator(name: str, target):
    """MetaSchedule's space generator for the space ``name`` on ``target``: the target's own
    default (on an AVX-512 CPU that includes the int8 VNNI tiling rule and tensorize
    postprocessor, which no fp32 kernel matches) with the variant's one rule changed."""

    if check(name) == DEFAULT:
        return "post-order-apply"
    if name in INTRINSIC_VARIANTS:
        return _with_intrinsic(*INTRINSIC_VARIANTS[name][1:], target)
    _, kind, changes = VARIANTS[name]
    rules, postprocs, mutators = _target_defaults(target)
    rules[_index_of(rules, kind)] = _default_rule(kind, changes)
    if "max_jobs_per_core" in changes:  # the mutator of parallel extents keeps the same bound
        jobs = changes["max_jobs_per_core"]
        mutators = {
            ms.mutator.MutateParallel(jobs) if type(m).__name__ == "MutateParallel" else m: p
            for m, p in mutators.items()
        }
    return ms.space_generator.PostOrderApply(
        sch_rules=rules, postprocs=postprocs, mutator_probs=mutators
    )


def _with_intrinsic(intrinsic: str, reorder: bool, target):
    """The target's default space with a ``MultiLevelTilingWithIntrin`` of ``intrinsic`` before
    its ``MultiLevelTiling`` (and the convolution reordering before both, if ``reorder``)."""
    fp32_intrinsics.register()
    rules, postprocs, mutators = _target_defaults(target)
    tiling = _index_of(rules, "MultiLevelTiling")
    rules.insert(tiling, _default_rule("MultiLevelTilingWithIntrin", {"intrin_name": intrinsic}))
    if reorder:
        rules.insert(_index_of(rules, "AddRFactor"), ReorderConvReduction())
    # the default's RewriteTensorize (for VNNI) also vectorises the init loop: an fp32
    # micro-kernel inside a vectorised loop then fails to build ("vectorize inside vectorized")
    postprocs = [p for p in postprocs if type(p).__name__ != "RewriteTensorize"]
    postprocs.insert(
        _index_of(postprocs, "RewriteLayout"),
        ms.postproc.RewriteTensorize(vectorize_init_loop=False),
    )
    return ms.space_generator.PostOrderApply(
        sch_rules=rules, postprocs=postprocs, mutator_probs=mutators
    )


def _index_of(items: list, kind: str) -> int:
    found = [i for i, item in enumerate(items) if type(item).__name__ == kind]
    if len(found) != 1:
        raise RuntimeError(f"expected one {kind} in MetaSchedule's CPU space, found {len(found)}")
    return found[0]


def _target_defaults(target) -> tuple[list, list, dict]:
    """The rules, postprocessors and mutators MetaSchedule derives from ``target`` (it does so
    only inside a tune context, which needs a module: a one-element one)."""
    x = te.placeholder((1,), name="x")
    probe = tvm.IRModule({"main": te.create_prim_func([x, te.compute((1,), lambda i: x[i])])})
    space = ms.TuneContext(mod=probe, target=target, space_generator="post-order-apply")
    space = space.space_generator
    return list(space.sch_rules), list(space.postprocs), dict(space.mutator_probs)


def _default_rule(kind: str, changes: dict):
    """The rule ``kind`` as MetaSchedule's DefaultLLVM makes it (read in TVM's
    ``src/s_tir/meta_schedule/schedule_rule/schedule_rule.cc``), with ``changes``."""
    if kind in ("MultiLevelTiling", "MultiLevelTilingWithIntrin"):
        default = {
            "structure": "SSRSRS",
            "max_innermost_factor": 64,
            "reuse_write": ReuseType(req="may", levels=[1, 2], scope="global"),
        }
        return getattr(ms.schedule_rule, kind)(**(default | changes))
    default = {
        "max_jobs_per_core": 16,
        "max_vectorize_extent": 64,
        "unroll_max_steps": [0, 16, 64, 512],
        "unroll_explicit": True,
    }
    return ms.schedule_rule.ParallelizeVectorizeUnroll(**(default | changes))


@derived_object
class ReorderConvReduction(ms.schedule_rule.PyScheduleRule):
    """TOPI's ``conv2d_NCHWc`` reduces over (input channel, kh, kw); the micro-kernel needs the
    input channels innermost: (kh, kw, input channel). Same result, another order."""

    def _initialize_with_tune_context(self, context) -> None:
        pass

    def apply(self, sch, block):
        kinds = [int(iv.iter_type) for iv in sch.get(block).iter_vars]
        spatial, reduce = int(IterVar.DataPar), int(IterVar.CommReduce)
        if sch.get(block).name_hint == "conv2d_NCHWc" and kinds == [spatial] * 5 + [reduce] * 3:
            sch.transform_block_layout(
                block, lambda n, oc, oh, ow, ob, ic, kh, kw: (n, oc, oh, ow, ob, kh, kw, ic)
            )
        return [sch]

    def clone(self):
        return ReorderConvReduction()
