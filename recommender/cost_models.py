"""Models that rank a kernel's candidates by predicted transfer benefit, scikit-learn style.

Every model has ``fit(X, y, *, qid) -> self`` and ``predict(X) -> (n_samples,)`` scores where
higher means faster. ``y`` is the normalised throughput inside each query group (one group per
target kernel, as ``qid``): best known time / candidate time, 0 for a failed candidate, as
TVM's own XGB cost model normalises. Learners and baselines share the interface, so evaluation
treats them alike; ``create(name)`` builds one by name.

Shipped models persist as XGBoost's own JSON (or plain JSON coefficients) plus
``metadata.json``; loading never unpickles and refuses another feature schema or target.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import sklearn
import tvm
import xgboost

from .errors import InputError
from .features import FEATURE_NAMES, SCHEMA_VERSION


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
        objective: str = "rank:pairwise",
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
        self.booster_ = xgboost.XGBRanker(**self.params, tree_method="hist", n_jobs=2)
        self.booster_.fit(X, np.asarray(y, dtype=np.float64), qid=np.asarray(qid))
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        self._require_fitted()
        return self.booster_.predict(_check_xy(X))


MODELS = {cls.name: cls for cls in (XGBRanking, RandomRanking, NearestShape, BestHome)}


def create(name: str, **params):
    """A model by name, e.g. ``create("xgb", objective="rank:ndcg")``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")
    return MODELS[name](**params)


def data_hash(X: np.ndarray, y: np.ndarray, qid: np.ndarray) -> str:
    digest = hashlib.sha256()
    for array in (X, y, qid):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


def save(model: XGBRanking, directory: Path, *, target: tvm.target.Target, data: str) -> None:
    """XGBoost JSON + ``metadata.json`` (schema, feature names, versions, params, data hash)."""
    model._require_fitted()
    directory.mkdir(parents=True, exist_ok=True)
    model.booster_.get_booster().save_model(str(directory / "model.json"))
    metadata = {
        "model": model.name,
        "params": model.params,
        "feature_schema": SCHEMA_VERSION,
        "feature_names": list(FEATURE_NAMES),
        "target": json.loads(str(target)),
        "versions": {
            "tvm": tvm.__version__,
            "xgboost": xgboost.__version__,
            "scikit-learn": sklearn.__version__,
        },
        "training_data": data,
    }
    (directory / "metadata.json").write_text(json.dumps(metadata, indent=1) + "\n")


def load(directory: Path) -> XGBRanking:
    """Load a saved ranker; a different feature schema or feature list is refused."""
    meta_path = directory / "metadata.json"
    try:
        metadata = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise InputError("no metadata.json: not a saved cost model", path=directory) from None
    except json.JSONDecodeError as err:
        raise InputError(f"corrupt metadata ({err.msg})", path=meta_path) from None
    if metadata.get("feature_schema") != SCHEMA_VERSION:
        raise InputError(
            f"feature schema {metadata.get('feature_schema')}, expected {SCHEMA_VERSION}",
            path=meta_path,
        )
    if metadata.get("feature_names") != list(FEATURE_NAMES):
        raise InputError("feature names differ from this version's schema", path=meta_path)
    model = create(metadata["model"], **metadata["params"])
    booster = xgboost.XGBRanker()
    booster.load_model(str(directory / "model.json"))
    model.booster_ = booster
    model.n_features_in_ = len(FEATURE_NAMES)
    model.metadata_ = metadata
    return model
