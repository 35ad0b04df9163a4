"""Transferring schedules: applied, checked against the unscheduled kernel, timed, written."""

import json
import os

import pytest
import tvm
from tiny import conv_matmul_net, conv_net, matmul_net
from tvm.s_tir import meta_schedule as ms

from recommender.backend.measure import make_runner, measure
from recommender.backend.workers import RECYCLE_AFTER
from recommender.core.errors import RecommenderError
from recommender.evaluate import endtoend
from recommender.evaluate.workflows import compare_with_metaschedule, transfer_tune_to_dir
from recommender.learn.dataset import add_transfer_run
from recommender.learn.kernel_data import KernelData
from recommender.logs.history import bisect_stops, database_at, kernel_curve, timed_records
from recommender.logs.sources import load_sources
from recommender.logs.tuning_log import TuningLog
from recommender.tasks.extract import extract_tasks
from recommender.transfer.apply import Level, apply_trace
from recommender.transfer.exhaustive import transfer_tune


@pytest.fixture(scope="module")
def sources(conv_log, target):
    work_dir, _ = conv_log
    return load_sources({"tinyconv": work_dir}, target, top_n=2)


def only_task(network, target):
    [task] = extract_tasks(network, target)
    return task


def test_conv_schedule_on_another_conv_shape_is_correct_and_faster(sources, target):
    task = only_task(conv_net(channels=16, size=8, out_channels=32), target)
    applied = apply_trace(sources[0].trace, task.mod, target)
    assert applied.ok, applied.reason
    assert applied.tile_decisions > 0
    [[untuned, transferred]] = measure([(task.mod, [task.mod, applied.schedule.mod])], target)
    assert untuned.ok and transferred.ok
    assert transferred.run_s < untuned.run_s


def test_a_transferred_trace_survives_metaschedules_mutations(sources, target):
    """MetaSchedule's search (as in ``--then-tune``) mutates database traces and replays them
    without their postprocessing: every mutant of a transferred record must still apply."""
    task = only_task(conv_net(channels=16, size=8, out_channels=32), target)
    applied = apply_trace(sources[0].trace, task.mod, target)
    context = ms.TuneContext(
        mod=task.mod, target=target, space_generator="post-order-apply", rand_state=1
    )
    mutators = list(context.space_generator.mutator_probs) * 10
    mutants = [t for t in (m.apply(applied.schedule.trace) for m in mutators) if t is not None]
    assert len(mutants) > 10
    for mutant in mutants:
        replayed = apply_trace(mutant, task.mod, target)
        assert replayed.ok, replayed.reason


def test_conv_schedule_on_a_matmul_is_rejected_with_a_reason(sources, target):
    applied = apply_trace(sources[0].trace, only_task(matmul_net(), target).mod, target)
    assert not applied.ok
    assert "Cannot find a block with the name: pad_temp" in applied.reason


def copy_kernels():
    """A copy kernel and three broken 'schedules' of it: one adds 1, one has an index the
    compiler proves out of bounds, one reads far out of bounds at a data-dependent index."""
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def copy(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.sblock("copy"):
                vi = T.axis.spatial(64, i)
                b[vi] = a[vi]

    @T.prim_func(s_tir=True)
    def wrong(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.sblock("copy"):
                vi = T.axis.spatial(64, i)
                b[vi] = a[vi] + T.float32(1)

    @T.prim_func(s_tir=True)
    def unbuildable(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.sblock("copy"):
                vi = T.axis.spatial(64, i)
                b[vi * 100000000] = a[vi]

    @T.prim_func(s_tir=True)
    def crash(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.sblock("copy"):
                vi = T.axis.spatial(64, i)
                b[vi] = a[T.Cast("int32", a[vi] * T.float32(1e9)) + 1000000000]

    return [tvm.IRModule({"main": f}) for f in (copy, wrong, unbuildable, crash)]


def test_wrong_or_crashing_candidates_are_recorded_and_the_run_goes_on(target):
    reference, wrong, unbuildable, crash = copy_kernels()
    results = measure([(reference, [wrong, unbuildable, crash, reference])], target)
    [[bad, unbuilt, dead, good]] = results
    assert bad.stage == "verify" and "outputs differ" in bad.error
    assert unbuilt.stage == "build" and unbuilt.error
    assert dead.stage == "verify" and "verification run failed" in dead.error
    assert good.ok and good.run_s > 0


def test_workers_outlive_a_crashed_candidate_and_serve_the_next_batch(target):
    reference, wrong, _, crash = copy_kernels()
    [[dead]] = measure([(reference, [crash])], target)
    assert dead.stage == "verify"
    [[bad, good]] = measure([(reference, [wrong, reference])], target)
    assert bad.stage == "verify" and "outputs differ" in bad.error
    assert good.ok and good.run_s > 0


def test_a_runner_worker_that_can_no_longer_load_kernels_is_replaced_not_blamed(target):
    def exhaust_file_descriptors() -> None:  # as a worker that leaked them would have
        import resource

        resource.setrlimit(
            resource.RLIMIT_NOFILE, (3, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        )

    reference, candidate = copy_kernels()[0], copy_kernels()[0]
    make_runner().pool.submit(exhaust_file_descriptors).result()
    [[good]] = measure([(reference, [candidate])], target)
    assert good.ok and good.run_s > 0


def test_the_runners_worker_is_replaced_every_few_hundred_jobs():
    pool = make_runner().pool
    pids = [pool.submit(os.getpid).result() for _ in range(RECYCLE_AFTER + 1)]
    assert len(set(pids)) == 2


def test_transfer_tuning_writes_a_database_that_compiles_to_correct_code(
    conv_log, target, tmp_path
):
    work_dir, _ = conv_log
    network = conv_net(channels=16, size=8, out_channels=32)
    report = transfer_tune_to_dir(
        network, target, {"tinyconv": work_dir}, tmp_path, top_n=2, progress=False
    )
    [kernel] = report["kernels"]
    assert kernel["candidates"] == 2 and kernel["source"].startswith("tinyconv/")
    assert report["speedup"] > 1
    assert json.loads((tmp_path / "report.json").read_text())["network"] == network.name
    # TVM's own reader and compile_relax take the output as it is
    database = ms.database.JSONDatabase(work_dir=str(tmp_path))
    assert len(database.get_all_tuning_records()) == 1
    from recommender.tasks.extract import prepare

    prepared = prepare(network.mod, target)
    tuned = endtoend.build(prepared, target, database)
    assert endtoend.outputs_match(endtoend.build(prepared, target), tuned, network) is None
    assert (tmp_path / f"{network.name}.so").stat().st_size > 0

    # builds made side by side in worker processes compute the same, and are kept by key
    builds = endtoend.Builds(prepared, target, keep=tmp_path / "kept")
    builds.want("untuned")
    builds.want("tuned", tmp_path)  # a JSON work dir, as the evaluation's methods leave them
    builds.want("tuned again", database)
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "database_workload.json").write_text("{not json\n")
    (corrupt / "database_tuning_record.json").write_text("")
    builds.want("corrupt", corrupt)
    with pytest.raises(RecommenderError, match="'corrupt': build failed"):
        builds.build_wanted()  # named once the builds beside it are kept
    assert builds.get("tuned") is builds.get("tuned")
    with pytest.raises(KeyError, match="no build of 'retuned' was wanted"):
        builds.get("retuned")
    # kept by content too: a rerun compiles nothing it had compiled
    rerun = endtoend.Builds(prepared, target, keep=tmp_path / "kept")
    rerun.want("plain")
    rerun.want("tuned", tmp_path)
    rerun.want("tuned again", database)  # a database object is written out the same each time
    assert endtoend.outputs_match(tuned, rerun.get("tuned"), network) is None
    assert (builds.compiled, rerun.compiled) == (3, 0)
    for name in ("untuned", "tuned", "tuned again"):
        assert endtoend.outputs_match(tuned, builds.get(name), network) is None
    # slow builds (here: every build) are timed with plain runs after their first round
    pair = {"untuned": builds.get("untuned"), "tuned": builds.get("tuned")}
    times = endtoend.time_interleaved(pair, network, repeats=3, slow_s=0.0)
    assert set(times) == {"untuned", "tuned"} and all(0 < t < 1 for t in times.values())


def test_kernels_no_source_reaches_get_metaschedules_design_space_unless_exact_only(
    sources, target, tmp_path
):
    network = conv_matmul_net()  # the reshape and the matmul have no source in a conv log
    run = transfer_tune(network, target, sources, progress=False)
    unreached = [k for k in run.kernels if all(c.level is Level.DEFAULT for c in k.candidates)]
    assert len(unreached) == 2 and len(run.kernels) == 3
    for kernel in unreached:  # each sample checked and timed against the untuned kernel
        assert kernel.candidates and all(c.source is None for c in kernel.candidates)
        assert kernel.untuned_s and all(c.run_s or c.failure for c in kernel.candidates)
        if kernel.best is not None:  # kept only where it beats naive loops (not on tiny ones)
            assert kernel.best.level is Level.DEFAULT and kernel.best.run_s < kernel.untuned_s
    # the evaluation keeps such a run as dataset rows: the transfer pairs only, not the samples
    [conv] = [k for k in run.kernels if k.candidates and all(c.source for c in k.candidates)]
    [path] = add_transfer_run(run, tmp_path, family_of={})
    assert list(KernelData.load(path).sources) == [c.source.label for c in conv.candidates]
    paper = transfer_tune(network, target, sources, progress=False, levels=(Level.EXACT,))
    assert sum(not k.candidates for k in paper.kernels) == 2  # as published: left untuned


def test_best_so_far_reconstruction_is_monotone(conv_log, target):
    work_dir, _ = conv_log
    timed, workloads = timed_records(TuningLog.open(work_dir))
    curve = kernel_curve(timed, {0: 1})
    values = [v for _, v in curve]
    assert values == sorted(values, reverse=True)
    assert values[-1] == min(t.run_s for t in timed)
    sizes = [len(database_at(timed, t).get_all_tuning_records()) for t, _ in curve]
    assert sizes == sorted(sizes) and sizes[-1] == 1  # one workload: its best record


def test_time_to_match_bisects_the_stamps_with_one_probe_per_step():
    stops = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]
    probed = []
    search = bisect_stops(stops)
    stamp = next(search)
    try:
        while True:
            probed.append(stamp)
            stamp = search.send(stamp >= 45.0)  # MetaSchedule matches from 50 s on
    except StopIteration as done:
        assert done.value == 50.0
    assert probed[0] == 80.0 and len(probed) == 1 + 3  # the last stop, then log2(8) steps
    never = bisect_stops(stops)
    next(never)
    with pytest.raises(StopIteration) as done:
        never.send(False)
    assert done.value.value is None


def test_compare_reports_the_papers_columns(conv_log, target, tmp_path):
    work_dir, _ = conv_log
    network = conv_net()  # the logged network itself: transfer from its own log
    transfer_tune_to_dir(network, target, {"self": work_dir}, tmp_path, progress=False)
    row = compare_with_metaschedule(network, target, tmp_path, work_dir)
    assert set(row["end_to_end_ms"]) == {
        "untuned",
        "transfer",
        "metaschedule",
        "metaschedule_same_time",
    }
    assert row["speedup"] > 1 and row["max_speedup"] > 1
    assert row["metaschedule_tuning_s"] > 0
