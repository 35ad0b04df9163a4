"""A saved XGBoost model predicts from its JSON with numpy: what XGBoost itself predicts."""

import json

import numpy as np
import pytest
import xgboost

from recommender.learn.trees import TreeEnsemble, UnsupportedModel

rng = np.random.default_rng(1)
X = rng.normal(size=(600, 12))
QID = np.repeat(np.arange(60), 10)
Y = np.round(10 * (X[:, 0] > 0.3) + 3 * np.tanh(X[:, 4] * X[:, 7])).clip(0, 10)


def saved(model, tmp_path) -> TreeEnsemble:
    path = tmp_path / "model.json"
    model.get_booster().save_model(str(path))
    return TreeEnsemble.load(path)


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise"])
def test_a_ranker_scores_every_row_as_xgboost_does(tmp_path, objective):
    ranker = xgboost.XGBRanker(objective=objective, n_estimators=30, max_depth=8, n_jobs=1)
    ranker.fit(X, Y, qid=QID)
    np.testing.assert_array_equal(saved(ranker, tmp_path).predict(X), ranker.predict(X))


def test_a_classifier_gives_xgboosts_probabilities(tmp_path):
    classifier = xgboost.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1)
    classifier.fit(X, Y > 5)
    trees = saved(classifier, tmp_path)
    np.testing.assert_allclose(trees.predict_proba(X), classifier.predict_proba(X), rtol=1e-6)


def test_early_stopping_predicts_with_the_trees_up_to_the_best_iteration(tmp_path):
    regressor = xgboost.XGBRegressor(n_estimators=200, early_stopping_rounds=3, n_jobs=1)
    regressor.fit(X[:500], Y[:500], eval_set=[(X[500:], Y[500:])], verbose=False)
    assert regressor.best_iteration < 199  # stopped early: later trees exist but are not used
    np.testing.assert_array_equal(saved(regressor, tmp_path).predict(X), regressor.predict(X))


def test_what_it_cannot_evaluate_is_refused_by_name(tmp_path):
    model = xgboost.XGBRegressor(objective="reg:absoluteerror", n_estimators=2).fit(X, Y)
    with pytest.raises(UnsupportedModel, match="objective 'reg:absoluteerror'"):
        saved(model, tmp_path)
    (tmp_path / "other.json").write_text(json.dumps({"learner": {}}))
    with pytest.raises(ValueError, match="not an XGBoost JSON model"):
        TreeEnsemble.load(tmp_path / "other.json")
    ranker = xgboost.XGBRanker(n_estimators=2).fit(X, Y, qid=QID)
    with pytest.raises(ValueError, match="X must have 12 columns"):
        saved(ranker, tmp_path).predict(X[:, :5])


def test_a_second_load_reads_the_cached_tables_and_a_corrupt_one_is_parsed_again(tmp_path):
    ranker = xgboost.XGBRanker(n_estimators=10, max_depth=4, n_jobs=1).fit(X, Y, qid=QID)
    ranker.get_booster().save_model(str(tmp_path / "ranker.json"))
    cache = tmp_path / "cache"
    parsed = TreeEnsemble.load(tmp_path / "ranker.json", cache=cache)
    (kept,) = cache.glob("*.npz")
    cached = TreeEnsemble.load(tmp_path / "ranker.json", cache=cache)
    np.testing.assert_array_equal(cached.predict(X), parsed.predict(X))
    kept.write_bytes(b"not an npz")
    np.testing.assert_array_equal(
        TreeEnsemble.load(tmp_path / "ranker.json", cache=cache).predict(X), ranker.predict(X)
    )
