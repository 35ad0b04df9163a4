"""Named MetaSchedule search spaces for CPU tuning: the default and variants of its x86 settings.

MetaSchedule's default CPU space tiles every reduction ``SSRSRS`` with inner tiles up to 64,
parallelises up to 16 jobs per core, vectorises up to 64 lanes and unrolls up to 512 steps
(``ScheduleRule.create("llvm")``). The variants change one of those at a time, so that a
benchmark of kernels tuned in each (``scripts/tune_kernels.py --space``) says which setting
pays on this CPU. A log records its space in its provenance; records of two spaces are kept
in separate logs (``TuningLog.create_or_resume``).
"""

from __future__ import annotations

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


def names() -> list[str]:
    return [DEFAULT, *VARIANTS]


def check(name: str) -> str:
    """``name`` if it names a space; else an error listing them."""
    if name != DEFAULT and name not in VARIANTS:
        raise InputError(f"unknown search space {name!r}; choose one of: {', '.join(names())}")
    return name


def space_generator(name: str, target):
    """MetaSchedule's space generator for the space ``name`` on ``target``: the target's own
    default (on an AVX-512 CPU that includes the int8 VNNI tiling rule and tensorize
    postprocessor, which no fp32 kernel matches) with the variant's one rule changed."""
    from tvm.s_tir import meta_schedule as ms

    if check(name) == DEFAULT:
        return "post-order-apply"
    _, kind, changes = VARIANTS[name]
    rules, postprocs, mutators = _target_defaults(target)
    found = [i for i, rule in enumerate(rules) if type(rule).__name__ == kind]
    if len(found) != 1:
        raise RuntimeError(f"expected one {kind} in MetaSchedule's CPU rules, found {len(found)}")
    rules[found[0]] = _default_rule(kind, changes)
    if "max_jobs_per_core" in changes:  # the mutator of parallel extents keeps the same bound
        jobs = changes["max_jobs_per_core"]
        mutators = {
            ms.mutator.MutateParallel(jobs) if type(m).__name__ == "MutateParallel" else m: p
            for m, p in mutators.items()
        }
    return ms.space_generator.PostOrderApply(
        sch_rules=rules, postprocs=postprocs, mutator_probs=mutators
    )


def _target_defaults(target) -> tuple[list, list, dict]:
    """The rules, postprocessors and mutators MetaSchedule derives from ``target`` (it does so
    only inside a tune context, which needs a module: a one-element one)."""
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    x = te.placeholder((1,), name="x")
    probe = tvm.IRModule({"main": te.create_prim_func([x, te.compute((1,), lambda i: x[i])])})
    space = ms.TuneContext(mod=probe, target=target, space_generator="post-order-apply")
    space = space.space_generator
    return list(space.sch_rules), list(space.postprocs), dict(space.mutator_probs)


def _default_rule(kind: str, changes: dict):
    """The rule ``kind`` as MetaSchedule's DefaultLLVM makes it (read in TVM's
    ``src/s_tir/meta_schedule/schedule_rule/schedule_rule.cc``), with ``changes``."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.schedule_rule import ReuseType

    if kind == "MultiLevelTiling":
        default = {
            "structure": "SSRSRS",
            "max_innermost_factor": 64,
            "reuse_write": ReuseType(req="may", levels=[1, 2], scope="global"),
        }
        return ms.schedule_rule.MultiLevelTiling(**(default | changes))
    default = {
        "max_jobs_per_core": 16,
        "max_vectorize_extent": 64,
        "unroll_max_steps": [0, 16, 64, 512],
        "unroll_explicit": True,
    }
    return ms.schedule_rule.ParallelizeVectorizeUnroll(**(default | changes))
