"""Weights prepacked as TVM's ``cpu_weight_prepack`` pipeline does: a network's weights are
marked layout-free in its kernels, and a schedule that rewrites its weight's layout is checked
with the rewrite in the kernel and timed without it."""

import dataclasses

import tvm
from tiny import conv_net

from recommender.backend.fixes import tune_context
from recommender.core.configuration import Configuration
from recommender.evaluate.kernel_bench import time_variants
from recommender.tasks.extract import (
    LAYOUT_FREE,
    extract_tasks,
    structural_key,
    without_layout_free,
)

BLOCKED = Configuration(layout="NCHW16c")


def conv_with_weights():
    """A blocked 3x3 convolution whose weight is a constant of the network, as in the zoo."""
    network = conv_net(32, 16)
    main = network.graph["main"].with_attr("num_input", 1)  # x is the input, w a weight
    return dataclasses.replace(network, graph=tvm.IRModule({"main": main}), weights_seed=0)


def tasks(target, layout_free: bool):
    network = conv_with_weights()
    return extract_tasks(
        network, target, configuration=BLOCKED, cache=False, layout_free=layout_free
    )


def marked(tasks):
    return [t for t in tasks if list(t.mod["main"].attrs.get(LAYOUT_FREE, []))]


def test_only_the_weights_are_marked_and_the_kernels_are_otherwise_the_same(target):
    plain, free = tasks(target, False), tasks(target, True)
    [conv] = marked(free)
    assert conv.kernel_class.summary == "data_pad+conv2d_NCHWc+compute"
    assert [int(i) for i in conv.mod["main"].attrs[LAYOUT_FREE]] == [1]  # the weight, not x
    # unmarked, the same kernels (the pass renames and reorders them)
    assert sorted(structural_key(without_layout_free(t.mod)) for t in free) == sorted(
        t.structural_key for t in plain
    )


def test_a_schedule_that_rewrites_its_weight_is_checked_with_it_and_timed_without(target, tmp_path):
    [conv] = marked(tasks(target, True))
    context = tune_context(mod=conv.mod, target=target, space_generator="post-order-apply")
    variants = {}
    for i, sketch in enumerate(context.generate_design_space()):
        sketch.enter_postproc()  # as MetaSchedule marks them: a replay redoes them fresh
        for postproc in context.space_generator.postprocs:
            assert postproc.apply(sketch)
        assert "layout_rewrite" in sketch.mod.script()  # RewriteLayout re-laid the weight out
        variants[f"sketch{i}"] = (conv.mod, sketch.trace)
    row = time_variants("conv", variants, None, target, threads=1, onnx_dir=tmp_path, rounds=1)
    assert row["failures"] == {}  # every sketch computes what the unscheduled kernel does
    assert set(row["ms"]) == set(variants) and all(ms > 0 for ms in row["ms"].values())
