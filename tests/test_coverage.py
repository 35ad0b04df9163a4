"""Coverage: which share of a network's FLOPs the source schedules reach, at which level, and
why the other kernels stay untuned. Real tiny tasks and the tiny conv + relu log; nothing is
timed here (where timings matter, measurements are written by hand)."""

import json

import numpy as np
import pytest
import tvm
from tvm import relax

from recommender.backend.measure import Measurement, Stage
from recommender.cli.main import _parser, main
from recommender.logs.sources import load_sources
from recommender.networks.network import Network, inputs_of
from recommender.recommend.ranking import RankedKernel
from recommender.recommend.report import recommendation_summary, recommendation_table
from recommender.recommend.search import Budget, KernelChoice, Recommendation
from recommender.tasks.extract import extract_tasks
from recommender.transfer.apply import Level
from recommender.transfer.candidate import Candidate, apply_all, apply_candidates
from recommender.transfer.coverage import Gap, KernelOutcome, coverage, weighted_flops
from recommender.transfer.exhaustive import TransferRun
from recommender.transfer.report import summary, table


def mixed_net() -> Network:
    """Four kernels: conv + relu (the source's own class: exact), conv + bias + relu (its
    anchor: anchor), a reshape (no reduction, no anchor class) and a matmul (an anchor class no
    source has)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 8, 8), "float32"))
    w1 = relax.Var("w1", relax.TensorType((8, 4, 3, 3), "float32"))
    w2 = relax.Var("w2", relax.TensorType((8, 8, 3, 3), "float32"))
    b = relax.Var("b", relax.TensorType((1, 8, 1, 1), "float32"))
    m = relax.Var("m", relax.TensorType((512, 16), "float32"))
    with bb.function("main", [x, w1, w2, b, m]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(x, w1, padding=1)))
            y = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.nn.conv2d(y, w2, padding=1), b)))
            y = bb.emit(relax.op.reshape(y, (1, 512)))
            out = bb.emit_output(relax.op.matmul(y, m))
        bb.emit_func_output(out)
    mod = bb.get()
    return Network(name="mixed", graph=mod, inputs=inputs_of(mod))


@pytest.fixture(scope="module")
def sources(conv_log, target):
    return load_sources({"tinyconv": conv_log[0]}, target, top_n=2)


@pytest.fixture(scope="module")
def tasks(target):
    return {task.kernel_class.summary: task for task in extract_tasks(mixed_net(), target)}


def kernels_of(tasks, sources, target, levels=(Level.EXACT, Level.ANCHOR)):
    kernels = apply_candidates(list(tasks.values()), sources, target, levels=levels)
    apply_all(kernels)
    return {k.task.kernel_class.summary: k for k in kernels}


def share(tasks, *summaries) -> float:
    total = sum(weighted_flops(t) for t in tasks.values())
    return sum(weighted_flops(tasks[s]) for s in summaries) / total


EXACT, ANCHOR = "pad+conv2d_nchw+compute", "pad+conv2d_nchw+add+compute"
RESHAPE, MATMUL = "reshape", "matmul"


def test_the_tiny_network_has_one_kernel_per_outcome(tasks):
    assert sorted(tasks) == sorted([EXACT, ANCHOR, RESHAPE, MATMUL])
    assert tasks[RESHAPE].kernel_class.anchor is None
    assert tasks[ANCHOR].kernel_class.anchor == tasks[EXACT].kernel_class.anchor


@pytest.mark.parametrize("levels", [(Level.EXACT, Level.ANCHOR), (Level.EXACT,)])
def test_flop_shares_add_up_and_split_by_level(tasks, sources, target, levels):
    kernels = kernels_of(tasks, sources, target, levels)
    cov = coverage(KernelOutcome(k.task, k.candidates, None) for k in kernels.values())
    assert sum(cov.applies.values()) == pytest.approx(1.0, abs=1e-9)
    assert cov.applies["exact"] == pytest.approx(share(tasks, EXACT), abs=1e-9)
    if Level.ANCHOR in levels:
        assert cov.applies["anchor"] == pytest.approx(share(tasks, ANCHOR), abs=1e-9)
        assert cov.applies["none"] == pytest.approx(share(tasks, RESHAPE, MATMUL), abs=1e-9)
    else:
        assert cov.applies["anchor"] == 0.0
    assert cov.timed is None  # nothing was timed
    assert cov.flops == sum(weighted_flops(t) for t in tasks.values())


def test_kernels_left_untuned_say_why(tasks, sources, target):
    kernels = kernels_of(tasks, sources, target)
    cov = coverage(KernelOutcome(k.task, k.candidates, None) for k in kernels.values())
    why = {u.task.kernel_class.summary: (u.gap, u.detail) for u in cov.unscheduled}
    assert why[RESHAPE] == (Gap.NO_CLASS, "exact class reshape; no anchor class")
    assert why[MATMUL][0] is Gap.NO_CLASS
    assert why[MATMUL][1].startswith("exact class matmul; anchor class matmul:SSR:")
    assert {u.share for u in cov.unscheduled if u.task is tasks[RESHAPE]} == {0.0}  # no FLOPs
    # by hand: the conv schedules offered to the matmul as if it were of their class
    matmul = tasks[MATMUL]
    offered = [Candidate(s, matmul.mod, target, Level.EXACT) for s in sources]
    [none_applies] = coverage([KernelOutcome(matmul, offered, None)]).unscheduled
    assert none_applies.gap is Gap.NONE_APPLIES
    assert "Cannot find a block with the name: pad_temp" in none_applies.detail


def measured(run_s: float | None, stage: Stage = Stage.OK, error: str | None = None):
    return Measurement(run_s, stage, error)


@pytest.fixture
def timed_kernels(tasks, sources, target):
    """Hand-written measurements: the exact kernel's candidates beat untuned, the anchor
    kernel's are one slower than untuned and one wrong."""
    kernels = kernels_of(tasks, sources, target)
    exact, anchor = kernels[EXACT], kernels[ANCHOR]
    exact.untuned, anchor.untuned = measured(1e-3), measured(1e-3)
    for run_s, c in zip([2e-4, 3e-4], exact.candidates):
        c.measurement = measured(run_s)
    anchor.candidates[0].measurement = measured(2e-3)
    for c in anchor.candidates[1:]:
        c.measurement = measured(None, Stage.VERIFY, "outputs differ")
    return kernels


def test_timed_shares_follow_the_chosen_candidates_level(tasks, timed_kernels):
    cov = coverage(
        KernelOutcome(k.task, k.candidates, k.best, k.untuned_s) for k in timed_kernels.values()
    )
    assert cov.timed == pytest.approx(
        {
            "exact": share(tasks, EXACT),
            "anchor": 0.0,
            "default": 0.0,
            "untuned_faster": share(tasks, ANCHOR),
        }
    )
    [slower] = [u for u in cov.unscheduled if u.task is tasks[ANCHOR]]
    assert slower.gap is Gap.UNTUNED_FASTER and slower.detail == "fastest 2 ms, untuned 1 ms"
    for c in timed_kernels[ANCHOR].candidates:
        c.measurement = measured(None, Stage.VERIFY, "outputs differ")
    cov = coverage(KernelOutcome(k.task, k.candidates, k.best) for k in timed_kernels.values())
    [invalid] = [u for u in cov.unscheduled if u.task is tasks[ANCHOR]]
    assert (invalid.gap, invalid.detail) == (Gap.NONE_VALID, "verify: outputs differ")


def test_both_reports_carry_the_same_coverage(tasks, timed_kernels, target):
    run = TransferRun("mixed", target, mixed_net().mod, list(timed_kernels.values()))
    report = json.loads(json.dumps(summary(run, {})))  # JSON-friendly
    cov = report["coverage"]
    assert set(cov) == {"flops", "applies", "timed", "unscheduled"}
    assert all(v == round(v, 4) for v in cov["applies"].values())
    rows = {row["task"]: row for row in report["kernels"]}
    assert rows[tasks[EXACT].name]["level"] == "exact"
    assert rows[tasks[EXACT].name]["pool"] == {"exact": 2, "anchor": 0, "default": 0}
    assert rows[tasks[ANCHOR].name]["level"] is None
    assert rows[tasks[ANCHOR].name]["pool"] == {"exact": 0, "anchor": 2, "default": 0}
    assert [u["reason"] for u in cov["unscheduled"]].count("no candidate of its class") == 2
    lines = table(report).splitlines()
    assert lines[-4].startswith("coverage of 0.1 MFLOP: a candidate applies to ")
    assert lines[-3].startswith("without a schedule: 3 kernels, ")

    # the recommender keeps the kernels it could rank, each with its pick
    ranked = [
        RankedKernel(k, k.candidates, np.zeros(len(k.candidates)), np.zeros(len(k.candidates)))
        for k in (timed_kernels[EXACT], timed_kernels[ANCHOR])
    ]
    by_task = {id(r.kernel.task): r for r in ranked}
    choices = [
        KernelChoice(k.task, by_task.get(id(k.task)), None, k.candidates)
        for k in timed_kernels.values()
    ]
    for choice in choices:
        if choice.ranked:
            choice.untuned_s, choice.chosen = (
                choice.ranked.kernel.untuned_s,
                choice.ranked.kernel.best,
            )
    result = Recommendation("mixed", target, mixed_net().mod, Budget(top_k=1), choices)
    recommended = recommendation_summary(result, {})
    assert recommended["coverage"]["applies"] == cov["applies"]
    assert recommended["coverage"]["timed"] == cov["timed"]
    rows = {row["task"]: row for row in recommended["kernels"]}
    assert rows[tasks[EXACT].name]["level"] == "exact"
    assert rows[tasks[RESHAPE].name]["pool"] == {"exact": 0, "anchor": 0, "default": 0}
    assert "without a schedule: 3 kernels" in recommendation_table(recommended)


@pytest.fixture(scope="module")
def mixed_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "mixed.json"
    path.write_text(tvm.ir.save_json(mixed_net().mod))
    return path


def test_the_tasks_command_shows_both_classes(mixed_json, tasks, capsys):
    assert main(["tasks", str(mixed_json)]) == 0
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("task "))
    assert out[start].split() == ["task", "kernel", "class", "anchor", "class", "weight", "MFLOP"]
    rows = {line.split()[0]: line.split() for line in out[start + 2 :]}
    assert rows[tasks[RESHAPE].name][2] == "-"
    assert rows[tasks[EXACT].name][2] == tasks[EXACT].kernel_class.anchor

    assert main(["tasks", str(mixed_json), "--json"]) == 0
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)["tasks"]}
    assert listed[tasks[RESHAPE].name]["anchor_class"] is None
    assert listed[tasks[MATMUL].name]["anchor_class"] == tasks[MATMUL].kernel_class.anchor


def test_transfer_tune_exact_only_is_the_papers_algorithm():
    argv = ["transfer-tune", "resnet18", "--out", "out"]
    assert _parser().parse_args([*argv, "--exact-only"]).exact_only
    assert not _parser().parse_args(argv).exact_only
