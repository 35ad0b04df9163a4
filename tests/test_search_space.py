"""A kernel can be tuned in a variant of MetaSchedule's CPU search space (one setting changed);
its log names the space, and records of two spaces are never mixed."""

import json

import numpy as np
import pytest
import tvm
from tiny import conv_net

from recommender.backend.fixes import tune_context
from recommender.backend.measure import arg_specs
from recommender.backend.verify import compare, random_arguments
from recommender.core.configuration import Configuration
from recommender.core.errors import InputError
from recommender.logs import search_space
from recommender.logs.collect import collect_tasks
from recommender.tasks.extract import extract_tasks

TINY = {"trials_per_task": 4, "trials_per_iter": 4, "population": 16, "progress": False}


def test_each_variant_changes_one_rule_of_the_targets_own_space(target):
    default = {str(rule) for rule in search_space._target_defaults(target)[0]}
    for name, (_, kind, _) in search_space.VARIANTS.items():
        rules = search_space.space_generator(name, target).sch_rules
        [changed] = [str(rule) for rule in rules if str(rule) not in default]
        assert changed.startswith(f"s_tir.meta_schedule.{kind}("), name
    jobs4 = search_space.space_generator("jobs4", target).mutator_probs
    assert "s_tir.meta_schedule.MutateParallel(max_jobs_per_core=4)" in {str(m) for m in jobs4}


def test_a_kernel_tuned_in_a_variant_space_says_so_and_is_not_resumed_in_another(target, tmp_path):
    [task] = extract_tasks(conv_net(), target)[:1]
    summary = collect_tasks("conv", [task], target, tmp_path, space="tile16", **TINY)
    assert summary.trials_this_run >= 4 and summary.failures_this_run == 0
    assert json.loads((tmp_path / "provenance.json").read_text())["space"] == "tile16"
    with pytest.raises(InputError, match="tuned in search space 'tile16', not 'default'"):
        collect_tasks("conv", [task], target, tmp_path, **TINY | {"trials_per_task": 8})
    with pytest.raises(InputError, match="unknown search space 'tile8'; choose one of: default"):
        collect_tasks("conv", [task], target, tmp_path / "other", space="tile8", **TINY)


@pytest.mark.parametrize("space", list(search_space.INTRINSIC_VARIANTS))
def test_a_blocked_convolution_tiled_around_a_micro_kernel_computes_what_it_did(target, space):
    """Sketches whose padding stayed apart hold the micro-kernel (one where MetaSchedule
    inlined the padding into the convolution keeps plain loops: TVM warns and goes on)."""
    blocked = Configuration(layout="NCHW16c", fast_math=True)
    net = conv_net(channels=32, size=14, out_channels=32)
    tasks = extract_tasks(net, target, configuration=blocked)
    [task] = [t for t in tasks if "conv2d_NCHWc" in t.kernel_class.summary]
    context = tune_context(
        mod=task.mod,
        target=target,
        space_generator=search_space.space_generator(space, target),
        search_strategy="replay-trace",
        task_name=task.name,
        num_threads=1,
        rand_state=1,
    )
    built = []
    for sketch in context.generate_design_space():
        schedule = tvm.s_tir.Schedule(task.mod)
        sketch.trace.apply_to_schedule(schedule, remove_postproc=True)
        assert all(p.apply(schedule) for p in context.space_generator.postprocs)
        if "llvm.fmuladd" in schedule.mod.script() or "T.Broadcast" in schedule.mod.script():
            built.append(tvm.compile(schedule.mod, target=target))
    assert built
    reference = tvm.compile(task.mod, target=target)
    _, specs = arg_specs(task.mod)

    def output(function) -> np.ndarray:
        arguments = [tvm.runtime.tensor(a) for a in random_arguments(specs, seed=0)]
        function["main"](*arguments)
        return arguments[-1].numpy()

    for kernel in built:
        assert compare(output(kernel), output(reference), "float32") is None
