"""The baseline the shipped ranker must beat: MetaSchedule's XGB throughput model (approximated
on mean/max store features) pre-trained on every corpus record but the held-out network's."""

import shutil

import numpy as np
import pytest

from recommender.cli.main import main
from recommender.core.errors import InputError
from recommender.learn.dataset import load_dataset
from recommender.learn.evaluation import leave_one_model_out, with_throughput_baseline
from recommender.learn.throughput_baseline import (
    PretrainedThroughput,
    fit_without,
    record_features,
    store_columns,
)
from recommender.learn.training import training_set

ROUNDS = 60  # MetaSchedule's 10000 with early stopping; a few suffice on 8 records


@pytest.fixture(scope="module")
def logs(conv_log, tmp_path_factory):
    """The tiny log twice, as two networks' logs of one corpus."""
    twin = tmp_path_factory.mktemp("corpus") / "twin"
    shutil.copytree(conv_log[0], twin)
    return {"tinyconv": conv_log[0], "twin": twin}


@pytest.fixture(scope="module")
def records(logs, target, tmp_path_factory):
    return record_features(logs, target, cache=tmp_path_factory.mktemp("cache"), progress=False)


def test_it_fits_on_records_and_scores_the_datasets_candidates(records, tiny_dataset):
    assert records.X.shape == (len(records.cost_s), 328)
    labels = records.labels()
    assert labels.max() == pytest.approx(1.0) and (labels > 0).all()
    model = fit_without(records, set(), max_rounds=ROUNDS)
    candidates = training_set(load_dataset(tiny_dataset))
    scores = model.predict(store_columns(candidates.X))
    assert scores.shape == (len(candidates.y),) and np.isfinite(scores).all()


def test_the_held_out_networks_records_are_left_out(records):
    twin_only = records.without({"tinyconv"})
    assert set(twin_only.networks) == {"twin"} and len(twin_only.cost_s) * 2 == len(records.cost_s)
    with pytest.raises(InputError, match="no corpus records"):
        fit_without(records, {"tinyconv", "twin"})


def test_store_features_only(records):
    with pytest.raises(ValueError, match=r"shape \(n_samples, 328\).*Got \(2, 3\)"):
        PretrainedThroughput().fit(np.zeros((2, 3)), np.ones(2), qid=[0, 0])
    with pytest.raises(RuntimeError, match="not fitted"):
        PretrainedThroughput().predict(records.X)


def test_a_missing_or_corrupt_cache_is_recomputed(logs, records, target, tmp_path):
    first = record_features(logs, target, cache=tmp_path, progress=False)
    [path] = tmp_path.glob("*.npz")  # one file for both logs: their content is the same
    np.testing.assert_allclose(first.X, records.X)
    path.write_bytes(b"not an npz")
    again = record_features(logs, target, cache=tmp_path, progress=False)
    np.testing.assert_allclose(again.X, records.X)
    np.load(path)  # rewritten whole
    path.unlink()
    np.testing.assert_allclose(record_features(logs, target, cache=tmp_path).X, records.X)


def test_it_is_evaluated_beside_the_other_learners(records, tiny_dataset):
    learners = {"nearest-shape": ("nearest-shape", {}), "random": ("random", {})}
    learners = with_throughput_baseline(records, learners)
    learners["ms-xgb-throughput-approx"][1]["max_rounds"] = ROUNDS
    results = leave_one_model_out(load_dataset(tiny_dataset), learners)
    for held in results:
        assert 0 < held.learners["ms-xgb-throughput-approx"]["top1"] <= 1


def test_cli_evaluates_it_on_request(conv_log, tiny_dataset, capsys):
    logs = str(conv_log[0].parent)
    command = ["evaluate-model", "--dataset", str(tiny_dataset), "--throughput-baseline"]
    assert main([*command, "--logs", logs]) == 0
    assert "ms-xgb-throughput-approx" in capsys.readouterr().out
