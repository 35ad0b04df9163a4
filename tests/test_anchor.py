"""Anchor-level transfer: a conv + relu schedule on convolutions with other epilogues.

The source log is the tiny conv + relu (``conv_log``). Its kernel class differs from a
conv + bias + residual + relu's or a conv + bias + hardswish's, so the paper's algorithm (same
class only) has nothing to offer them; their anchor block, the convolution, is the same, and
TVM's ``schedule_using_anchor_trace`` applies the convolution's steps and inlines the epilogue.
"""

import pytest
import tvm
from tiny import conv_hardswish_net, conv_matmul_net, conv_residual_net, matmul_net, mean_net
from tvm import relax, s_tir

from recommender.evaluate import endtoend
from recommender.logs.collect import collect_tasks
from recommender.logs.sources import load_sources
from recommender.tasks.extract import extract_tasks, lower, prepare
from recommender.tasks.workload import blocks_of
from recommender.transfer.apply import Level, apply_trace
from recommender.transfer.database import write_records
from recommender.transfer.exhaustive import transfer_tune

EPILOGUES = {
    "residual": (conv_residual_net, "compute"),  # T_add (bias) and T_add1 inlined into relu
    "hardswish": (conv_hardswish_net, "T_divide"),  # add, add, clip, multiply inlined
}


@pytest.fixture(scope="module")
def sources(conv_log, target):
    work_dir, _ = conv_log
    return load_sources({"tinyconv": work_dir}, target, top_n=2)


@pytest.fixture(scope="module", params=list(EPILOGUES))
def tuned(request, sources, target):
    """A network with another epilogue, transfer-tuned from the conv + relu log (~5 s)."""
    build, output_block = EPILOGUES[request.param]
    network = build()
    return network, output_block, transfer_tune(network, target, sources, progress=False)


def test_another_epilogue_shares_the_anchor_class_but_not_the_kernel_class(tuned, sources):
    network, _, run = tuned
    [kernel] = run.kernels
    [source_class] = {s.kernel_class for s in sources}
    assert kernel.task.kernel_class.key != source_class.key
    assert kernel.task.kernel_class.anchor == source_class.anchor
    assert kernel.task.kernel_class.anchor.startswith("conv2d_nchw:SSSSRRR:")
    assert [c.level for c in kernel.candidates] == [Level.ANCHOR] * len(sources)


def test_the_papers_exact_level_offers_another_epilogue_nothing(tuned, sources, target):
    network, _, _ = tuned
    run = transfer_tune(network, target, sources, progress=False, levels=(Level.EXACT,))
    [kernel] = run.kernels
    assert kernel.candidates == [] and kernel.best is None


def test_anchor_candidates_are_correct_faster_and_inline_the_epilogue(tuned):
    _, output_block, run = tuned
    [kernel] = run.kernels
    for candidate in kernel.candidates:
        assert candidate.applies, candidate.apply_reason
        assert candidate.measurement.ok, candidate.failure  # checked against the unscheduled
        assert candidate.run_s > 0
    assert kernel.best is not None and kernel.best.run_s < kernel.untuned_s
    names = {b.name for b in blocks_of(kernel.best.applied.schedule.mod)}
    anchor_and_output = {"conv2d_nchw_init", "conv2d_nchw_update", output_block}
    assert names - {"pad_temp"} == anchor_and_output  # the source's trace may inline the pad too


def test_a_conv_schedule_on_a_matmul_fails_with_a_reason_and_does_not_raise(sources, target):
    [task] = extract_tasks(matmul_net(), target)
    assert task.kernel_class.anchor.startswith("matmul:")  # never in a conv's anchor pool
    applied = apply_trace(sources[0].trace, task.mod, target, level=Level.ANCHOR)
    assert applied.ok is False and applied.schedule is None
    assert "Check failed" in applied.reason or "cannot be fulfilled" in applied.reason


def test_a_kernel_without_a_reduction_has_no_anchor_class(target):
    tasks = {t.kernel_class.summary: t for t in extract_tasks(conv_matmul_net(), target)}
    assert tasks["reshape"].kernel_class.anchor is None
    assert tasks["matmul"].kernel_class.anchor is not None


def test_an_anchor_schedule_stored_as_a_record_replays_and_builds_the_network(
    tuned, target, tmp_path
):
    network, _, run = tuned
    [kernel] = run.kernels
    best = kernel.best
    # its trace is an ordinary trace of the target workload: replayed in full, the same module
    replayed = s_tir.Schedule(kernel.task.mod)
    best.applied.schedule.trace.apply_to_schedule(replayed, remove_postproc=False)
    tvm.ir.assert_structural_equal(replayed.mod, best.applied.schedule.mod)
    # stored as a MetaSchedule record, TVM's own lookup replays it, and the network compiles
    database = write_records([(kernel.task, best, best.run_s)], target, tmp_path)
    queried = database.query_schedule(kernel.task.mod, target, workload_name="main")
    tvm.ir.assert_structural_equal(queried.mod, best.applied.schedule.mod)
    prepared = prepare(network.mod, target)
    with target, database, tvm.transform.PassContext(opt_level=3):
        applied = relax.transform.MetaScheduleApplyDatabase()(lower(prepared, target))
    [kernel_func] = [f for f in applied.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    assert kernel_func.attrs["tirx.is_scheduled"]  # what compile_relax does with the database
    tuned_build = endtoend.build(prepared, target, database)
    assert endtoend.outputs_match(endtoend.build(prepared, target), tuned_build, network) is None


def test_a_mean_named_after_each_models_variable_transfers_between_them(target, tmp_path):
    """ResNet-18's global mean is ``lv88_red`` in one export and ``lv114_red`` in another: one
    class, and the trace of one replays on the other with the block renamed."""
    source, other = mean_net(layers=1), mean_net(layers=3)
    means = [
        next(t for t in extract_tasks(n, target) if t.kernel_class.summary == "red+divide")
        for n in (source, other)
    ]
    assert [b.name for b in blocks_of(means[0].mod)][0] != [
        b.name for b in blocks_of(means[1].mod)
    ][0]
    assert means[0].kernel_class == means[1].kernel_class
    collect_tasks(
        "mean1",
        means[:1],
        target,
        tmp_path,
        trials_per_task=8,
        trials_per_iter=4,
        population=16,
        progress=False,
    )
    sources = load_sources({"mean1": tmp_path}, target, top_n=2)
    run = transfer_tune(other, target, sources, progress=False, levels=(Level.EXACT,))
    [kernel] = [k for k in run.kernels if k.task.kernel_class == means[1].kernel_class]
    assert kernel.candidates and all(c.applies for c in kernel.candidates)
    assert all(c.measurement.ok for c in kernel.candidates)  # checked against the unscheduled
