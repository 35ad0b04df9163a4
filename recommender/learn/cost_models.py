"""Models that rank a kernel's candidates by predicted transfer benefit, scikit-learn style.

Every model has ``fit(X, y, *, qid) -> self`` and ``predict(X) -> (n_samples,)`` scores where
higher means faster. ``y`` is the normalised throughput inside each query group (one group per
target kernel, as ``qid``): best known time / candidate time, 0 for a failed candidate, as
TVM's own XGB cost model normalises. Learners and baselines share the interface, so evaluation
treats them alike; ``create(name)`` builds one by name.

A shipped ``CostModel`` is the XGBoost ranker plus a failure classifier, persisted as
XGBoost's own JSON plus ``metadata.json``; loading never unpickles and refuses another feature
schema or target.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sklearn
import tvm
import xgboost
from sklearn.ensemble import HistGradientBoostingRegressor

from ..core.corpora import already_warned
from ..core.errors import InputError
from ..core.targets import same_arch, same_cpu, target_key
from .features import FEATURE_NAMES, SCHEMA_VERSION

# ahead of rank:pairwise at k = 2..5 and in recall under every setting tried, leave-one-model-out
# over 11 networks (docs/results/README.md, scripts/bench_rankers.py)
OBJECTIVE = "rank:ndcg"
RELEVANCE_GRADES = 10  # rank:ndcg learns round(10 x normalised throughput)

logger = logging.getLogger(__name__)


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
        scores = self.predict(X)
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

    def predict(self, X) -> np.ndarray:
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

    def predict(self, X) -> np.ndarray:
        self._require_fitted()
        X = _check_xy(X)
        cols = [FEATURE_NAMES.index(f"p_log_extent_ratio_{i}") for i in range(8)]
        return -np.abs(X[:, cols]).sum(axis=1)


class BestHome(_Heuristic):
    """Prefer the source that was fastest at home (throughput in GFLOP/s)."""

    name = "best-home"

    def predict(self, X) -> np.ndarray:
        self._require_fitted()
        X = _check_xy(X)
        return X[:, FEATURE_NAMES.index("s_log_gflops")]


class XGBRanking(_Model):
    """XGBoost's learning-to-rank, one query group per target kernel."""

    name = "xgb"

    def __init__(
        self,
        *,
        objective: str = OBJECTIVE,
        n_estimators: int = 300,
        max_depth: int = 6,
        learning_rate: float = 0.1,
        random_state: int = 0,
    ):
        self.objective = objective
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.random_state = random_state

    @property
    def params(self) -> dict:
        return {
            k: getattr(self, k)
            for k in ("objective", "n_estimators", "max_depth", "learning_rate", "random_state")
        }

    def fit(self, X, y, *, qid):
        X = _check_xy(X, y, qid)
        y = np.asarray(y, dtype=np.float64)
        if self.objective == "rank:ndcg":  # NDCG's gains need integer relevance grades
            y = np.round(y * RELEVANCE_GRADES)
        self.booster_ = xgboost.XGBRanker(**self.params, tree_method="hist", n_jobs=2)
        self.booster_.fit(X, y, qid=np.asarray(qid))
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        self._require_fitted()
        return self.booster_.predict(_check_xy(X))


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
        X = _check_xy(X, y, qid)
        self.regressor_ = HistGradientBoostingRegressor(**self.params).fit(X, y)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        self._require_fitted()
        return self.regressor_.predict(_check_xy(X))


MODELS = {
    cls.name: cls for cls in (XGBRanking, SklearnRegression, RandomRanking, NearestShape, BestHome)
}


def create(name: str, **params):
    """A model by name, e.g. ``create("xgb", objective="rank:ndcg")``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")
    return MODELS[name](**params)


class FailureClassifier:
    """Probability that an applied candidate fails to build, verify or run (XGBoost)."""

    def __init__(self, *, n_estimators: int = 100, max_depth: int = 4, random_state: int = 0):
        self.params = {
            "n_estimators": n_estimators,
            "max_depth": max_depth,
            "random_state": random_state,
        }

    def fit(self, X, failed) -> FailureClassifier:
        X = _check_xy(X, failed)
        failed = np.asarray(failed, dtype=bool)
        self.constant_ = float(failed.mean()) if failed.all() or not failed.any() else None
        if self.constant_ is None:  # XGBoost refuses a single class
            self.booster_ = xgboost.XGBClassifier(**self.params, tree_method="hist", n_jobs=2)
            self.booster_.fit(X, failed.astype(int))
        return self

    def predict_proba(self, X) -> np.ndarray:
        """P(failure) per candidate, shape (n_samples,)."""
        if not hasattr(self, "constant_"):
            raise NotFittedError("this FailureClassifier is not fitted yet; call fit first")
        X = _check_xy(X)
        if self.constant_ is not None:
            return np.full(len(X), self.constant_)
        return self.booster_.predict_proba(X)[:, 1]


@dataclass
class CostModel:
    """What the recommender loads: a ranker, a failure classifier and their metadata."""

    ranker: XGBRanking
    failure: FailureClassifier
    metadata: dict = field(default_factory=dict)


def data_hash(X: np.ndarray, y: np.ndarray, qid: np.ndarray) -> str:
    digest = hashlib.sha256()
    for array in (X, y, qid):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


def save(
    model: CostModel,
    directory: Path,
    *,
    target: tvm.target.Target,
    data: dict | str,
    evaluation: dict | None = None,
) -> None:
    """XGBoost JSON for both boosters + ``metadata.json`` (schema, versions, target, data, and
    the leave-one-model-out ``evaluation`` whose recall curve guides budgeted recommendation)."""
    ranker = model.ranker
    if not isinstance(ranker, XGBRanking):
        raise ValueError(f"only the xgb ranker can be saved without pickling, not {ranker.name}")
    ranker._require_fitted()
    directory.mkdir(parents=True, exist_ok=True)
    ranker.booster_.get_booster().save_model(str(directory / "ranker.json"))
    failure = model.failure
    if failure.constant_ is None:
        failure.booster_.get_booster().save_model(str(directory / "failure.json"))
    else:
        (directory / "failure.json").unlink(missing_ok=True)
    metadata = {
        "model": ranker.name,
        "params": ranker.params,
        "failure": {"params": failure.params, "constant": failure.constant_},
        "feature_schema": SCHEMA_VERSION,
        "feature_names": list(FEATURE_NAMES),
        "target": json.loads(str(target)),
        "target_key": target_key(target),
        "versions": {
            "tvm": tvm.__version__,
            "xgboost": xgboost.__version__,
            "scikit-learn": sklearn.__version__,
        },
        "training_data": data,
        "evaluation": evaluation or {},
    }
    (directory / "metadata.json").write_text(json.dumps(metadata, indent=1) + "\n")


def load(directory: Path, *, target: tvm.target.Target | None = None) -> CostModel:
    """Load a saved cost model; another feature schema, or another architecture than
    ``target``'s, is refused. Another core count is not (the ranking is per kernel, relative),
    and another CPU of the architecture only warns: its timings rank less well here."""
    meta_path = directory / "metadata.json"
    try:
        metadata = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise InputError(
            "no metadata.json: not a saved cost model (train one with `recommender train`)",
            path=directory,
        ) from None
    except json.JSONDecodeError as err:
        raise InputError(f"corrupt metadata ({err.msg})", path=meta_path) from None
    if metadata.get("feature_schema") != SCHEMA_VERSION:
        raise InputError(
            f"feature schema {metadata.get('feature_schema')}, expected {SCHEMA_VERSION}",
            path=meta_path,
        )
    if metadata.get("feature_names") != list(FEATURE_NAMES):
        raise InputError("feature names differ from this version's schema", path=meta_path)
    if (kind := metadata.get("model")) != XGBRanking.name:  # the only kind save() writes
        raise InputError(f"unknown model kind {kind!r}; expected one of: xgb", path=meta_path)
    trained_for = metadata.get("target_key")
    if target is not None and not same_cpu(trained_for, target):
        if not same_arch(trained_for, target):
            raise InputError(
                f"trained for target {trained_for}, not {target_key(target)}", path=meta_path
            )
        cpus = (trained_for.get("mcpu") or "no -mcpu", str(target.attrs.get("mcpu", "no -mcpu")))
        (logger.info if already_warned(*cpus) else logger.warning)(
            "%s: trained on timings of %s, ranks for %s: train one on logs of this CPU "
            "(`recommender dataset build`, `recommender train`) to rank better",
            *(meta_path, *cpus),
        )
    ranker = create(kind, **metadata["params"])
    ranker.booster_ = _load_booster(xgboost.XGBRanker(), directory / "ranker.json")
    ranker.n_features_in_ = len(FEATURE_NAMES)
    failure = FailureClassifier(**metadata["failure"]["params"])
    failure.constant_ = metadata["failure"]["constant"]
    if failure.constant_ is None:
        failure.booster_ = _load_booster(xgboost.XGBClassifier(), directory / "failure.json")
    return CostModel(ranker, failure, metadata)


def _load_booster(booster, path: Path):
    try:
        booster.load_model(str(path))
    except xgboost.core.XGBoostError as err:
        message = str(err).strip().splitlines()[0][:200]
        raise InputError(f"not an XGBoost JSON model ({message})", path=path) from None
    return booster
