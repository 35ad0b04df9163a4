"""A saved XGBoost model predicting from its own JSON, with numpy alone.

Importing ``xgboost`` imports scikit-learn whenever it is installed (its sklearn wrappers are
defined at import), 0.7 s of every command that only ranks. A shipped ranker is a tree
ensemble, and scoring a kernel's few hundred candidates with it is a few thousand array
operations: this reads XGBoost's JSON model (the file ``model_files`` ships) and predicts what
``XGBRanker.predict`` and ``XGBClassifier.predict_proba`` predict, to float32 rounding. Fitting
stays XGBoost's.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

# objective -> output transform of the summed margin
_IDENTITY = ("rank:ndcg", "rank:pairwise", "rank:map", "reg:squarederror")
_LOGISTIC = ("binary:logistic",)
_TABLES_FORMAT = 1  # bump when the cached tables change meaning
_ROW_CHUNK = 512  # rows walked at once: their (trees, rows) node table stays in cache


class UnsupportedModel(ValueError):
    """A JSON model this reader does not evaluate (another booster, a categorical split...)."""


class TreeEnsemble:
    """The trees of an XGBoost ``gbtree`` model, flattened into one node table: ``child[2 * n]``
    and ``child[2 * n + 1]`` are node ``n``'s left and right children; a leaf is its own two
    children, so a walk of the deepest tree's ``depth`` ends on every tree's leaf, and a leaf's
    ``threshold`` (its split condition) is its value."""

    def __init__(
        self,
        *,
        objective: str,
        n_features: int,
        base_margin: float,
        depth: int,
        child: np.ndarray,
        feature: np.ndarray,
        threshold: np.ndarray,
        roots: np.ndarray,
    ):
        self.objective, self.n_features, self.depth = str(objective), int(n_features), int(depth)
        self.base_margin = np.float32(base_margin)
        self.child, self.feature, self.threshold, self.roots = child, feature, threshold, roots

    @classmethod
    def from_json(cls, model: dict) -> TreeEnsemble:
        """From a parsed ``Booster.save_model`` JSON; raises ``UnsupportedModel``."""
        learner = model["learner"]
        objective = learner["objective"]["name"]
        if objective not in _IDENTITY + _LOGISTIC:
            raise UnsupportedModel(f"objective {objective!r} is not read here")
        booster = learner["gradient_booster"]
        if booster.get("name") != "gbtree":
            raise UnsupportedModel(f"booster {booster.get('name')!r}: only gbtree is read here")
        params = learner["learner_model_param"]
        if int(params.get("num_target", 1)) != 1 or int(params.get("num_class", 0)) > 1:
            raise UnsupportedModel("a model with more than one output is not read here")
        base = float(str(params["base_score"]).strip("[]"))
        if objective in _LOGISTIC:  # stored as a probability
            base = np.log(base / (1 - base))
        trees = booster["model"]["trees"]
        last = learner.get("attributes", {}).get("best_iteration")
        if last is not None:  # XGBoost predicts with the trees up to its best iteration
            trees = trees[: booster["model"]["iteration_indptr"][int(last) + 1]]
        return cls(
            objective=objective,
            n_features=int(params["num_feature"]),
            base_margin=base,
            depth=max((_depth(t) for t in trees), default=0),
            **_flatten(trees),
        )

    @classmethod
    def load(cls, path: Path, cache: Path | None = None) -> TreeEnsemble:
        """Read a model saved by ``Booster.save_model`` as JSON; raises ValueError (not JSON,
        not a model) or ``UnsupportedModel``. With ``cache``, its tables are kept there, keyed
        by the file's content: parsing a 300-tree model's JSON takes 60 ms, its tables 2 ms."""
        data = Path(path).read_bytes()
        digest = hashlib.sha256(data + f"|{_TABLES_FORMAT}".encode()).hexdigest()[:24]
        kept = cache / f"{digest}.npz" if cache else None
        if kept and kept.exists():
            try:
                with np.load(kept, allow_pickle=False) as tables:
                    return cls(**{k: tables[k] for k in tables.files})
            except (OSError, ValueError, KeyError, TypeError):
                pass  # unreadable: parse the JSON again
        try:
            model = cls.from_json(json.loads(data))
        except (KeyError, TypeError, IndexError) as err:
            raise ValueError(f"not an XGBoost JSON model (no {err})") from None
        if kept:
            model._keep(kept)
        return model

    def _keep(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
            np.savez(tmp, **vars(self))
            tmp.replace(path)
        except OSError:
            pass  # a cache that cannot be written costs the next load 60 ms

    def margin(self, X: np.ndarray) -> np.ndarray:
        """The summed leaf values plus the base margin, per row (float32, XGBoost's order)."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have {self.n_features} columns, not {X.shape}")
        if not np.isfinite(X).all():  # XGBoost would send a missing value its default way
            raise ValueError("X holds NaN or infinite values")
        out = np.empty(len(X), dtype=np.float32)
        for start in range(0, len(X), _ROW_CHUNK):
            out[start : start + _ROW_CHUNK] = self._margin(X[start : start + _ROW_CHUNK])
        return out

    def _margin(self, X: np.ndarray) -> np.ndarray:
        """Every tree walked for every row at once: a (trees, rows) table of node indices."""
        values = np.ascontiguousarray(X).ravel()
        row_start = np.arange(len(X), dtype=np.int64) * X.shape[1]
        node = np.repeat(self.roots[:, None], len(X), axis=1)
        for _ in range(self.depth):  # XGBoost goes left where value < condition
            right = values[row_start + self.feature[node]] >= self.threshold[node]
            node = self.child[2 * node + right]
        total = np.full(len(X), self.base_margin, dtype=np.float32)
        for leaves in self.threshold[node]:  # tree by tree, as XGBoost accumulates
            total += leaves
        return total

    def predict(self, X: np.ndarray) -> np.ndarray:
        """What the sklearn wrapper's ``predict`` returns: the margin for a ranker or regressor,
        the probability of class 1 for a binary classifier."""
        margin = self.margin(X)
        if self.objective in _LOGISTIC:
            return 1.0 / (1.0 + np.exp(-margin))
        return margin

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """``XGBClassifier.predict_proba``: columns P(class 0), P(class 1)."""
        if self.objective not in _LOGISTIC:
            raise UnsupportedModel(f"{self.objective} predicts no probabilities")
        p = self.predict(X)
        return np.column_stack([1 - p, p])


def _flatten(trees: list[dict]) -> dict[str, np.ndarray]:
    """The node table of ``TreeEnsemble``, every tree's nodes after the previous tree's."""
    children, features, thresholds, roots = [], [], [], []
    offset = 0
    for tree in trees:
        if any(int(t) != 0 for t in tree.get("split_type", [])):
            raise UnsupportedModel("a categorical split is not read here")
        left = np.asarray(tree["left_children"], dtype=np.int32)
        right = np.asarray(tree["right_children"], dtype=np.int32)
        itself = np.arange(len(left), dtype=np.int32)
        leaf = left < 0
        pairs = np.stack([np.where(leaf, itself, left), np.where(leaf, itself, right)], 1)
        children.append(pairs.ravel() + offset)
        features.append(np.asarray(tree["split_indices"], dtype=np.int32))
        thresholds.append(np.asarray(tree["split_conditions"], dtype=np.float32))
        roots.append(offset)
        offset += len(left)
    return {
        "child": np.concatenate(children or [np.zeros(0, np.int32)]),
        "feature": np.concatenate(features or [np.zeros(0, np.int32)]),
        "threshold": np.concatenate(thresholds or [np.zeros(0, np.float32)]),
        "roots": np.asarray(roots, dtype=np.int32),
    }


def _depth(tree: dict) -> int:
    """Edges on the longest root-to-leaf path."""
    left, right = tree["left_children"], tree["right_children"]
    depth, level = 0, [0]
    while True:
        level = [c for n in level for c in (left[n], right[n]) if c >= 0]
        if not level:
            return depth
        depth += 1
