"""The shared contract of every ranking model, and saving the shipped one without pickles."""

import json

import numpy as np
import pytest

from recommender.core.errors import InputError
from recommender.core.targets import host_target
from recommender.learn import cost_models, model_files
from recommender.learn.features import (
    FEATURE_NAMES,
    RELATIVE_NAMES,
    SCHEMA_VERSION,
    relative_to_kernel,
)

rng = np.random.default_rng(0)
GROUPS, PER_GROUP = 60, 8
X = rng.normal(size=(GROUPS * PER_GROUP, len(FEATURE_NAMES)))
QID = np.repeat(np.arange(GROUPS), PER_GROUP)
# candidate time depends on two features; y = best time in the group / time (1.0 = best)
TIME = np.exp(-(X[:, 5] - 0.5 * X[:, 40]) + 0.1 * rng.normal(size=len(X)))
Y = np.concatenate([TIME[g == QID].min() / TIME[g == QID] for g in range(GROUPS)])
TRAIN, TEST = QID < 40, QID >= 40
SMALL = {
    "xgb": {"n_estimators": 40, "max_depth": 4},
    "sklearn": {"max_iter": 50},
}  # the toy data needs no more trees


@pytest.mark.parametrize("name", list(cost_models.MODELS))
def test_every_model_follows_the_estimator_contract(name):
    model = cost_models.create(name, **SMALL.get(name, {}))
    with pytest.raises(cost_models.NotFittedError, match="not fitted"):
        model.predict(X)
    assert model.fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN]) is model
    assert model.predict(X[TEST]).shape == (TEST.sum(),)
    assert 0.0 < model.score(X[TEST], Y[TEST], qid=QID[TEST]) <= 1.0
    shape = rf"X must have shape \(n_samples, {len(FEATURE_NAMES)}\).*Got \(3, 4\)"
    with pytest.raises(ValueError, match=shape):
        model.predict(np.zeros((3, 4)))


def test_relative_features_compare_a_candidate_with_its_own_kernels_only():
    home = FEATURE_NAMES.index("s_log_gflops")
    two_kernels = X[:16].copy()
    two_kernels[8:, home] += 100.0  # the second kernel's sources are all far faster at home
    qid = QID[:16]
    together = relative_to_kernel(two_kernels, qid)
    alone = np.vstack([relative_to_kernel(two_kernels[:8]), relative_to_kernel(two_kernels[8:])])
    np.testing.assert_array_equal(together, alone)
    gflops_below_best, gflops_rank = together[:8, 0], together[:8, 1]
    fastest = np.argmax(two_kernels[:8, home])
    assert gflops_below_best[fastest] == 0.0 and gflops_rank[fastest] == 0.0
    assert gflops_rank.max() == 1.0 and len(RELATIVE_NAMES) == together.shape[1]


def test_unknown_model_lists_the_valid_names():
    with pytest.raises(
        ValueError, match="unknown model 'svm'; choose one of: xgb, sklearn, random"
    ):
        cost_models.create("svm")


def test_nan_features_are_refused():
    bad = X[:8].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cost_models.create("xgb").fit(bad, Y[:8], qid=QID[:8])


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise", "reg:squarederror"])
def test_xgb_ranker_beats_random_on_held_out_groups(objective):
    xgb = cost_models.create("xgb", **SMALL["xgb"], objective=objective)
    xgb.fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN])
    rand = cost_models.create("random").fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN])
    assert (
        xgb.score(X[TEST], Y[TEST], qid=QID[TEST])
        > rand.score(X[TEST], Y[TEST], qid=QID[TEST]) + 0.2
    )


def test_ndcg_grades_beyond_xgboosts_exponential_gains_are_refused():
    """31 grades (3% of throughput each) is the finest XGBoost's exponential NDCG gains take;
    with linear gains any number is allowed."""
    with pytest.raises(ValueError, match=r"grades must be in \[1, 31\]"):
        cost_models.create("xgb", grades=40).fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN])
    fine = cost_models.create("xgb", **SMALL["xgb"], grades=31)
    linear = cost_models.create("xgb", **SMALL["xgb"], grades=100, exp_gain=False)
    for ranker in (fine, linear):
        ranker.fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN])
        assert ranker.score(X[TEST], Y[TEST], qid=QID[TEST]) > 0.8


@pytest.mark.parametrize(
    "settings",
    [{}, {"relative": True}, {"objective": "reg:squarederror"}],
    ids=["ranking", "relative", "regression"],
)
def test_a_loaded_model_predicts_as_xgboost_did_and_checks_the_schema(tmp_path, settings):
    """A loaded model predicts from its JSON without XGBoost (``learn.trees``): the ranker's
    scores are XGBoost's to the bit, the failure probabilities to float32 rounding (expf)."""
    ranker = cost_models.create("xgb", **SMALL["xgb"], **settings)
    ranker.fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN])
    failure = cost_models.CandidateClassifier(n_estimators=10).fit(X[TRAIN], Y[TRAIN] < 0.3)
    data = model_files.data_hash(X[TRAIN], Y[TRAIN], QID[TRAIN])
    model_files.save(
        model_files.CostModel(ranker, failure), tmp_path, target=host_target(), data=data
    )
    loaded = model_files.load(tmp_path, target=host_target())
    np.testing.assert_array_equal(
        ranker.predict(X[TEST], qid=QID[TEST]), loaded.ranker.predict(X[TEST], qid=QID[TEST])
    )
    np.testing.assert_allclose(
        failure.predict_proba(X[TEST]), loaded.failure.predict_proba(X[TEST]), rtol=1e-6
    )
    assert loaded.metadata["training_data"] == data and loaded.ranker.params == ranker.params
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    metadata["feature_schema"] = 0
    (tmp_path / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(
        InputError, match=f"metadata.json: feature schema 0, expected {SCHEMA_VERSION}"
    ):
        model_files.load(tmp_path)


def test_a_corrupt_booster_file_is_named(tmp_path):
    ranker = cost_models.create("xgb", **SMALL["xgb"]).fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN])
    failure = cost_models.CandidateClassifier().fit(X[TRAIN], Y[TRAIN] < 0)  # one class: constant
    model_files.save(
        model_files.CostModel(ranker, failure), tmp_path, target=host_target(), data=""
    )
    (tmp_path / "ranker.json").write_text("{not json")
    with pytest.raises(InputError, match="ranker.json: not an XGBoost JSON model"):
        model_files.load(tmp_path)


def test_only_the_xgb_ranker_is_saved_and_never_pickled(tmp_path):
    hgb = cost_models.create("sklearn", max_iter=10).fit(X[TRAIN], Y[TRAIN], qid=QID[TRAIN])
    failure = cost_models.CandidateClassifier().fit(X[TRAIN], Y[TRAIN] < 0.3)
    with pytest.raises(ValueError, match="only the xgb ranker can be saved"):
        model_files.save(
            model_files.CostModel(hgb, failure), tmp_path, target=host_target(), data=""
        )
