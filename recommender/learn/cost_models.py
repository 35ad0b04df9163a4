"""Models that rank a kernel's candidates by predicted transfer benefit, scikit-learn style.

Every model has ``fit(X, y, *, qid) -> self`` and ``predict(X) -> (n_samples,)`` scores where
higher means faster. ``y`` is the normalised throughput inside each query group (one group per
target kernel, as ``qid``): best known time / candidate time, 0 for a failed candidate, as
TVM's own XGB cost model normalises. Learners and baselines share the interface, so evaluation
treats them alike; ``create(name)`` builds one by name.

The shipped ranker and classifiers are stored by ``model_files`` (XGBoost JSON) and
predict through ``trees`` when loaded. XGBoost and scikit-learn are imported where a model is
fitted, never to predict with a loaded one (scikit-learn comes with XGBoost: 0.7 s).
"""

from __future__ import annotations

import numpy as np

from .features import (
    DERIVED_NAMES,
    FEATURE_NAMES,
    RELATIVE_NAMES,
    SCHEMA_VERSION,
    SCREEN_COLUMNS,
    relative_to_kernel,
    shape_distance,
    with_derived,
)

# ahead of rank:pairwise at k = 2..5 and in recall under every setting tried, leave-one-model-out
# over 11 networks (docs/results/README.md, scripts/bench_rankers.py)
OBJECTIVE = "rank:ndcg"
RELEVANCE_GRADES = 10  # rank:ndcg learns round(10 x normalised throughput)
# XGBoost's NDCG with exponential gains (2^grade - 1) accepts grades up to 31: at 31 a grade is
# about 3% of throughput, near the timing noise (``evaluation.TIE``), where 10 grades put every
# candidate within 5% of the best in one grade, so the first pick among them is not learned
MAX_EXP_GRADES = 31
# candidates per kernel the first stage of ranking keeps (a screen ranker): at 16 the screen cost
# 0.03 top-1 and 0.06 top-3 on the Zen 5 corpus (BERT 0.89 -> 0.62); 32 keeps one stage's top-1
# and about doubles the applying (scripts/bench_rankers.py, docs/results/rankers_znver5.json)
SCREEN_KEEP = 32
# One thread: XGBoost's OpenMP threads spin at each barrier, and on a 2-core machine with
# anything else running, two threads fitted the ranker 6x slower than one (52 s vs 8.5 s); alone,
# two gain about 15%. OMP_WAIT_POLICY=passive would fix it for every OpenMP library in the
# process, PyTorch's too, whose eager baseline we time.
THREADS = 1


class NotFittedError(RuntimeError):
    """``predict`` before ``fit``."""


def _check_xy(X: np.ndarray, y: np.ndarray | None = None, qid: np.ndarray | None = None):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(FEATURE_NAMES):
        raise ValueError(
            f"X must have shape (n_samples, {len(FEATURE_NAMES)}) (feature schema "
            f"{SCHEMA_VERSION}). Got {X.shape} instead."
        )
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values; featurize() never produces them")
    if y is not None and len(y) != len(X):
        raise ValueError(f"y has {len(y)} values for {len(X)} samples")
    if qid is not None and (len(qid) != len(X) or np.any(np.diff(qid) < 0)):
        raise ValueError("qid must have one non-decreasing group id per sample")
    return X


class _Model:
    name = ""
    params: dict = {}

    def _require_fitted(self) -> None:
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def score(self, X, y, *, qid) -> float:
        """Mean over groups of best true value / true value of the top-ranked candidate
        (the top-1 score, 1.0 = always picks the best)."""
        scores = self.predict(X, qid=qid)
        values = []
        for group in np.unique(qid):
            rows = np.flatnonzero(qid == group)
            best = y[rows].max()
            if best > 0:
                values.append(y[rows[np.argmax(scores[rows])]] / best)
        return float(np.mean(values)) if values else 0.0


class RandomRanking(_Model):
    """Random scores: the floor every learner must beat."""

    name = "random"

    def __init__(self, *, random_state: int = 0):
        self.random_state = random_state

    def fit(self, X, y, *, qid):
        self.n_features_in_ = _check_xy(X, y, qid).shape[1]
        return self

    def predict(self, X, *, qid=None) -> np.ndarray:
        self._require_fitted()
        X = _check_xy(X)
        return np.random.default_rng(self.random_state).random(len(X))


class _Heuristic(_Model):
    """A fixed rule over features; ``fit`` only checks the data."""

    def fit(self, X, y, *, qid):
        self.n_features_in_ = _check_xy(X, y, qid).shape[1]
        return self


class NearestShape(_Heuristic):
    """Prefer the source whose anchor extents are closest to the target's (log-ratio)."""

    name = "nearest-shape"

    def predict(self, X, *, qid=None) -> np.ndarray:
        self._require_fitted()
        return -shape_distance(_check_xy(X))


class BestHome(_Heuristic):
    """Prefer the source that was fastest at home (throughput in GFLOP/s)."""

    name = "best-home"

    def predict(self, X, *, qid=None) -> np.ndarray:
        self._require_fitted()
        X = _check_xy(X)
        return X[:, FEATURE_NAMES.index("s_log_gflops")]


class XGBRanking(_Model):
    """XGBoost's learning-to-rank, one query group per target kernel; or, with a ``reg:``
    objective, pointwise regression of the normalised throughput (as scikit-learn's HGB, but
    saved as XGBoost JSON: shippable)."""

    name = "xgb"
    _OWN = ("derived", "relative", "screen", "grades", "exp_gain")  # ours, not XGBRanker's

    def __init__(
        self,
        *,
        objective: str = OBJECTIVE,
        n_estimators: int = 300,
        max_depth: int = 6,
        learning_rate: float = 0.1,
        random_state: int = 0,
        derived: bool = True,
        relative: bool = False,
        screen: bool = False,
        grades: int = RELEVANCE_GRADES,
        exp_gain: bool = True,
    ):
        self.objective = objective
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.derived = derived
        self.relative = relative
        self.screen = screen
        self.grades = grades
        self.exp_gain = exp_gain

    @property
    def params(self) -> dict:
        names = ("objective", "n_estimators", "max_depth", "learning_rate", "random_state")
        return {k: getattr(self, k) for k in (*names, *self._OWN)}

    @property
    def derived_names(self) -> tuple[str, ...]:
        """The columns the ranker adds to ``X``: ``features.with_derived``'s if ``derived``,
        ``features.relative_to_kernel``'s if ``relative``."""
        return (DERIVED_NAMES if self.derived else ()) + (RELATIVE_NAMES if self.relative else ())

    def _inputs(self, X: np.ndarray, qid: np.ndarray | None) -> np.ndarray:
        """The columns the booster sees: with ``screen``, only those known before a candidate
        is applied (``features.SCREEN_COLUMNS``, plus the added ones)."""
        added = [X] if not self.derived else [with_derived(X)]
        if self.relative:
            added.append(relative_to_kernel(X, qid))
        X = np.hstack(added)
        if self.screen:
            X = X[:, [*SCREEN_COLUMNS, *range(len(FEATURE_NAMES), X.shape[1])]]
        return X

    def fit(self, X, y, *, qid):
        X = _check_xy(X, y, qid)
        y = np.asarray(y, dtype=np.float64)
        booster = {k: v for k, v in self.params.items() if k not in self._OWN}
        if self.objective == "rank:ndcg":  # NDCG's gains need integer relevance grades
            if self.exp_gain and not 1 <= self.grades <= MAX_EXP_GRADES:
                raise ValueError(f"grades must be in [1, {MAX_EXP_GRADES}] with exponential gains")
            y = np.round(y * self.grades)
            booster["ndcg_exp_gain"] = self.exp_gain
        import xgboost

        inputs = self._inputs(X, qid)
        if self.objective.startswith("reg:"):  # y is already relative to each kernel's best
            self.booster_ = xgboost.XGBRegressor(**booster, tree_method="hist", n_jobs=THREADS)
            self.booster_.fit(inputs, y)
        else:
            self.booster_ = xgboost.XGBRanker(**booster, tree_method="hist", n_jobs=THREADS)
            self.booster_.fit(inputs, y, qid=np.asarray(qid))
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X, *, qid=None) -> np.ndarray:
        """Scores of ``X``'s rows, one kernel per ``qid`` value (None: one kernel's rows)."""
        self._require_fitted()
        return self.booster_.predict(self._inputs(_check_xy(X, qid=qid), qid))


class SklearnRegression(_Model):
    """scikit-learn's histogram gradient boosting, regressing the normalised throughput.

    The second learner: pointwise where XGBoost ranks pairwise. Not shippable (scikit-learn
    persists only by pickling), so it serves the evaluation.
    """

    name = "sklearn"

    def __init__(self, *, max_iter: int = 300, learning_rate: float = 0.1, random_state: int = 0):
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.random_state = random_state

    @property
    def params(self) -> dict:
        return {k: getattr(self, k) for k in ("max_iter", "learning_rate", "random_state")}

    def fit(self, X, y, *, qid):
        from sklearn.ensemble import HistGradientBoostingRegressor

        X = _check_xy(X, y, qid)
        self.regressor_ = HistGradientBoostingRegressor(**self.params).fit(with_derived(X), y)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X, *, qid=None) -> np.ndarray:
        self._require_fitted()
        return self.regressor_.predict(with_derived(_check_xy(X)))


MODELS = {
    cls.name: cls for cls in (XGBRanking, SklearnRegression, RandomRanking, NearestShape, BestHome)
}


def create(name: str, **params):
    """A model by name, e.g. ``create("xgb", objective="rank:ndcg")``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")
    return MODELS[name](**params)


class CandidateClassifier:
    """Probability that an applied candidate fails to build, verify or run (the cost model's
    ``failure``), or that it runs no faster than the untuned kernel (its ``slower``): XGBoost."""

    def __init__(self, *, n_estimators: int = 100, max_depth: int = 4, random_state: int = 0):
        self.params = {
            "n_estimators": n_estimators,
            "max_depth": max_depth,
            "random_state": random_state,
        }

    def fit(self, X, positive) -> CandidateClassifier:
        X = _check_xy(X, positive)
        positive = np.asarray(positive, dtype=bool)
        self.constant_ = float(positive.mean()) if positive.all() or not positive.any() else None
        if self.constant_ is None:  # XGBoost refuses a single class
            import xgboost

            self.booster_ = xgboost.XGBClassifier(**self.params, tree_method="hist", n_jobs=THREADS)
            self.booster_.fit(X, positive.astype(int))
        return self

    def predict_proba(self, X) -> np.ndarray:
        """P(positive) per candidate, shape (n_samples,)."""
        if not hasattr(self, "constant_"):
            raise NotFittedError("this CandidateClassifier is not fitted yet; call fit first")
        X = _check_xy(X)
        if self.constant_ is not None:
            return np.full(len(X), self.constant_)
        return self.booster_.predict_proba(X)[:, 1]
