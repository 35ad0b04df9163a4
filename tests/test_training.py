"""Training and leave-one-model-out evaluation on a real (tiny) transfer-benefit dataset."""

import json

import numpy as np
import pytest

from recommender.cli.main import main
from recommender.core.errors import InputError
from recommender.learn import model_files
from recommender.learn.dataset import load_dataset
from recommender.learn.evaluation import (
    kernel_metrics,
    leave_one_model_out,
    mean_metrics,
    nested_leave_one_model_out,
)
from recommender.learn.features import FEATURE_NAMES
from recommender.learn.kernel_data import KernelData
from recommender.learn.levels import ANCHOR_COLUMN, first_pick_anchor, pool_levels
from recommender.learn.training import TrainingSet, train, training_set
from recommender.learn.untimed import summary, untimed_picks

SMALL_XGB = ("xgb", {"n_estimators": 60, "max_depth": 4})


def test_labels_are_throughput_relative_to_the_best_known_time(tiny_dataset):
    data = training_set(load_dataset(tiny_dataset))
    assert data.groups == 6 and data.X.shape == (len(data.y), len(FEATURE_NAMES))
    for group, kernel in enumerate(data.kernels):
        rows = data.rows(group)
        ok = ~data.failed[rows]
        np.testing.assert_allclose(data.y[rows][ok], kernel.best_s / data.run_s[rows][ok])
        assert np.all(data.y[rows][~ok] == 0) and data.y[rows].max() <= 1.0
        slower = ~ok | (data.run_s[rows] >= kernel.untuned_s)
        np.testing.assert_array_equal(data.slower[rows], slower)


def test_where_the_untuned_kernel_has_no_time_only_a_failure_is_slower():
    """Candidates at 1 ms, 3 ms and one that failed, against untuned 2 ms and no untuned time."""
    run_s = np.array([1e-3, 3e-3, np.nan])
    features = np.zeros((3, len(FEATURE_NAMES)))

    def kernel(untuned_s: float) -> KernelData:
        status = np.zeros(3, int)  # applied: a failure is at a later stage, in ``run_s``
        return KernelData(
            "net", "k", "c", 1, untuned_s, features, run_s, status, [], source_models=["m"] * 3
        )

    data = training_set([kernel(2e-3), kernel(float("nan"))])
    assert data.slower.tolist() == [False, True, True, False, False, True]


def test_the_ranker_beats_random_on_held_out_networks(tiny_dataset):
    results = leave_one_model_out(
        load_dataset(tiny_dataset), {"xgb": SMALL_XGB, "random": ("random", {})}
    )
    assert sorted(r.network for r in results) == sorted(
        f"conv{c}x{s}" for c, s in [(4, 16), (8, 8), (16, 8), (8, 32), (16, 16), (32, 8)]
    )
    means = mean_metrics(results)
    assert means["xgb"]["top1"] > means["random"]["top1"] + 0.05
    assert means["xgb"]["top10"] == pytest.approx(1.0)  # 8 candidates: top-10 times them all


def test_a_training_target_is_trained_on_but_never_held_out(tiny_dataset):
    kernels = load_dataset(tiny_dataset)
    only = {"conv4x16", "conv32x8"}
    results = leave_one_model_out(kernels, {"xgb": SMALL_XGB}, training_only=only)
    assert len(results) == 4 and not only & {r.network for r in results}


def test_another_cpus_kernels_pooled_in_are_trained_on_but_never_scored(tiny_dataset):
    kernels = load_dataset(tiny_dataset)
    networks_here = ("conv4x16", "conv8x8", "conv16x8")
    here = [k for k in kernels if k.network in networks_here]
    elsewhere = [k for k in kernels if k.network not in networks_here]  # say, another CPU's
    alone = leave_one_model_out(here, {"xgb": SMALL_XGB})
    pooled = leave_one_model_out(here, {"xgb": SMALL_XGB}, pooled=elsewhere)
    assert [r.network for r in pooled] == [r.network for r in alone] == sorted(networks_here)


def test_nested_selection_never_chooses_with_the_network_it_scores(tiny_dataset):
    """Random ranking scores worse than the ranker without each network too, so every fold
    chooses the ranker; the folds' scores are the ranker's own on that network."""
    kernels = load_dataset(tiny_dataset)
    settings = {"xgb": SMALL_XGB, "random": ("random", {})}
    folds = nested_leave_one_model_out(kernels, settings, training_only={"conv4x16"})
    plain = {r.network: r.learners["xgb"] for r in leave_one_model_out(kernels, {"xgb": SMALL_XGB})}
    assert [f.network for f in folds] == sorted(plain.keys() - {"conv4x16"})
    assert all(f.chosen == "xgb" and f.inner["xgb"] > f.inner["random"] for f in folds)
    for fold in folds:
        assert fold.metrics["top1"] == pytest.approx(plain[fold.network]["top1"])
    with pytest.raises(InputError, match="two settings or more, got 1"):
        nested_leave_one_model_out(kernels, {"xgb": SMALL_XGB})


def test_the_levels_say_what_anchor_transfers_add_to_a_networks_pools():
    """Two kernels of equal weight: one whose class no source has (anchor-level candidates
    only), one where an anchor-level candidate (1 ms) beats the exact one (2 ms)."""
    kernels = [
        KernelData("net", f"k{i}", "c", 1, 10e-3, np.zeros((0, 0)), *[np.zeros(0)] * 2, [])
        for i in range(2)
    ]
    X = np.zeros((4, len(FEATURE_NAMES)))
    X[[0, 1, 3], ANCHOR_COLUMN] = 1.0
    run_s = np.array([4e-3, 5e-3, 2e-3, 1e-3])
    test = TrainingSet(
        X, np.zeros(4), run_s, np.array([0, 0, 1, 1]), *[np.zeros(4, bool)] * 2, kernels
    )
    levels = pool_levels(test)
    assert levels["anchor_only_kernels"] == 0.5
    assert levels["exact_only_top1"] == pytest.approx((4 / 10 + 1 / 2) / 2)  # untuned, 2 ms
    assert first_pick_anchor(test, scores=np.array([1.0, 0.0, 1.0, 0.0])) == 0.5


def test_a_first_pick_within_the_timing_noise_of_the_fastest_is_a_hit_not_a_recall():
    """Candidates at 1.00, 1.01 (1% slower: noise), 1.50 ms and one that failed; the ranker
    puts the 1.01 ms one first."""
    kernel = KernelData("net", "k", "c", 1, 10e-3, np.zeros((0, 0)), *[np.zeros(0)] * 2, [])
    run_s = np.array([1.00e-3, 1.01e-3, 1.50e-3, np.nan])
    metrics = kernel_metrics(kernel, run_s, scores=np.array([0.5, 0.9, 0.1, 0.7]))
    assert metrics["recall@1"] == 0.0 and metrics["hit@1"] == 1.0
    assert metrics["recall@3"] == 1.0 and metrics["top1"] == pytest.approx(1 / 1.01)
    slow_first = kernel_metrics(kernel, run_s, scores=np.array([0.5, 0.4, 0.9, 0.7]))
    assert slow_first["hit@1"] == slow_first["hit@2"] == 0.0 and slow_first["hit@3"] == 1.0


def test_untimed_picks_predicted_slower_than_the_untuned_kernel_keep_it():
    """Per held-out network: three max-pools (untuned 0.05 ms) whose first-ranked candidate
    fails and whose second, predicted slower, takes 0.5 ms; three convolutions (untuned 10 ms)
    whose pick (1 ms) is predicted faster. The classifier keeps the pools untuned."""
    pools = [f"pad+pool_max@{i}" for i in range(3)]  # three classes, one kind
    kernels = [
        KernelData("net", klass, klass, 2, untuned, np.zeros((0, 0)), *[np.zeros(0)] * 2, [])
        for klass, untuned in [*[(p, 0.05e-3) for p in pools], *[("data_pad+conv2d@c", 10e-3)] * 3]
    ]
    run_s = np.array([np.nan, 0.5e-3, 0.01e-3] * 3 + [1e-3, 2e-3, 3e-3] * 3)
    qid = np.repeat(np.arange(6), 3)
    none = np.zeros(18, bool)
    test = TrainingSet(np.zeros((18, 1)), np.zeros(18), run_s, qid, none, none, kernels)
    p_slower = np.array([0.2, 0.9, 0.1] * 3 + [0.1, 0.1, 0.1] * 3)
    picks = untimed_picks(test, scores=np.tile([0.9, 0.5, 0.1], 6), p_slower=p_slower)
    assert picks["pool_max"] == [
        3,
        pytest.approx(6 * 0.05e-3),
        pytest.approx(6 * 0.5e-3),
        pytest.approx(6 * 0.05e-3),
    ]
    assert picks["conv2d"] == [3, pytest.approx(60e-3), pytest.approx(6e-3), pytest.approx(6e-3)]
    untimed = summary([picks, picks])  # what a saved model's metadata keeps
    assert untimed["pool_max"] == {
        "kernels": 6,
        "untuned_ms": 0.6,
        "ranked_ms": 6.0,
        "picked_ms": 0.6,
    }


def test_saved_model_predicts_identically_and_refuses_another_architecture(
    tiny_dataset, tmp_path, caplog
):
    data = training_set(load_dataset(tiny_dataset))
    model = train(data, n_estimators=30, max_depth=3)
    from recommender.core.targets import parse_target

    target = parse_target("llvm -mcpu=znver3 -num-cores=2")
    model_files.save(model, tmp_path, target=target, data=data.data_hash())
    loaded = model_files.load(tmp_path, target=target)
    np.testing.assert_array_equal(model.ranker.predict(data.X), loaded.ranker.predict(data.X))
    for classifier in ("failure", "slower"):  # to float32 rounding (expf)
        np.testing.assert_allclose(
            getattr(model, classifier).predict_proba(data.X),
            getattr(loaded, classifier).predict_proba(data.X),
            rtol=1e-6,
        )
    model_files.load(tmp_path, target=parse_target("llvm -mcpu=skylake -num-cores=2"))
    assert "trained on timings of znver3, ranks for skylake" in caplog.text
    board = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4")
    with pytest.raises(InputError, match="metadata.json: trained for target .*znver3"):
        model_files.load(tmp_path, target=board)


def test_a_dataset_too_small_to_rank_is_refused(tiny_dataset):
    one_kernel = training_set(load_dataset(tiny_dataset)[:1])
    with pytest.raises(InputError, match="has 1 kernel.*needs at least 2"):
        train(one_kernel)
    with pytest.raises(InputError, match="not a transfer-benefit dataset"):
        load_dataset(tiny_dataset / "conv4x16")


def test_cli_trains_and_evaluates(tiny_dataset, tmp_path, capsys):
    out = tmp_path / "model"
    assert main(["train", "--dataset", str(tiny_dataset), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"] == 6
    assert json.loads((out / "metadata.json").read_text())["training_data"]["kernels"] == 6
    plot = tmp_path / "score_vs_k.png"
    assert main(["evaluate-model", "--dataset", str(tiny_dataset), "--plot", str(plot)]) == 0
    table = capsys.readouterr().out
    assert "mean" in table and "xgb-pairwise" in table and "nearest-shape" in table
    assert "exact-only top1" in table and "worst top1" in table
    assert plot.stat().st_size > 10_000
    assert main(["evaluate-model", "--dataset", str(tiny_dataset), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    network, top1 = report["worst_top1"]["xgb-ndcg"]
    assert top1 == min(r["learners"]["xgb-ndcg"]["top1"] for r in report["networks"])
    assert network in {r["network"] for r in report["networks"]}
