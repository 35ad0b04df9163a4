"""A cost model on disk: the XGBoost ranker and classifiers as XGBoost's own JSON plus
``metadata.json`` (feature schema, target, versions, training data, evaluation). Loading never
unpickles, and refuses another feature schema or architecture; a loaded model predicts from
the JSON with numpy (``trees``), without importing XGBoost."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tvm

from ..core import paths
from ..core.corpora import already_warned
from ..core.errors import InputError
from ..core.targets import same_arch, same_cpu, target_key
from .cost_models import CandidateClassifier, XGBRanking, create
from .features import FEATURE_NAMES, SCHEMA_VERSION
from .trees import TreeEnsemble

logger = logging.getLogger(__name__)

# what a saved model holds: 1 before the ``slower`` classifier, 2 with it. The evaluation trains
# a held-out model saved in an older format again, and redoes the searches it ranked.
FORMAT = 2


@dataclass
class CostModel:
    """What the recommender loads: a ranker, a failure classifier, their metadata and, where
    trained (models saved before them have none), a ``screen`` ranker that orders candidates
    before they are applied (the first stage of ranking) and the ``slower`` classifier of
    candidates no faster than the untuned kernel (what an untimed choice consults)."""

    ranker: XGBRanking
    failure: CandidateClassifier
    metadata: dict = field(default_factory=dict)
    screen: XGBRanking | None = None
    slower: CandidateClassifier | None = None
    directory: Path | None = None  # where it was loaded from: reports name the model they used

    @property
    def format(self) -> int:
        return self.metadata.get("format", 1)


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
    """XGBoost JSON for every booster + ``metadata.json`` (schema, versions, target, data, and
    the leave-one-model-out ``evaluation`` whose recall curve guides budgeted recommendation)."""
    import sklearn  # both imported already: the model was just fitted
    import xgboost

    ranker = model.ranker
    if not isinstance(ranker, XGBRanking):
        raise ValueError(f"only the xgb ranker can be saved without pickling, not {ranker.name}")
    ranker._require_fitted()
    directory.mkdir(parents=True, exist_ok=True)
    ranker.booster_.get_booster().save_model(str(directory / "ranker.json"))
    if model.screen is not None:
        model.screen.booster_.get_booster().save_model(str(directory / "screen.json"))
    else:
        (directory / "screen.json").unlink(missing_ok=True)
    metadata = {
        "model": ranker.name,
        "format": FORMAT,
        "params": ranker.params,
        "failure": _save_classifier(model.failure, directory / "failure.json"),
        "slower": _save_classifier(model.slower, directory / "slower.json"),
        "screen": {"params": model.screen.params} if model.screen is not None else None,
        "feature_schema": SCHEMA_VERSION,
        "feature_names": list(FEATURE_NAMES),
        "derived_features": list(ranker.derived_names),
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
    params = {"derived": False, **metadata["params"]}  # models saved before it had no columns
    computed = list(create(kind, **params).derived_names)
    if metadata.get("derived_features", []) != computed:
        raise InputError(
            f"the ranker was trained with derived features {metadata.get('derived_features')}; "
            f"this version computes {computed}: train it again (`recommender train`)",
            path=meta_path,
        )
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
    ranker = create(kind, **params)
    ranker.booster_ = _load_trees(directory / "ranker.json")
    ranker.n_features_in_ = len(FEATURE_NAMES)
    failure = _load_classifier(metadata["failure"], directory / "failure.json")
    slower = None
    if metadata.get("slower"):
        slower = _load_classifier(metadata["slower"], directory / "slower.json")
    screen = None
    if metadata.get("screen"):
        screen = create(kind, **metadata["screen"]["params"])
        screen.booster_ = _load_trees(directory / "screen.json")
        screen.n_features_in_ = len(FEATURE_NAMES)
    return CostModel(ranker, failure, metadata, screen, slower, directory)


def _save_classifier(classifier: CandidateClassifier | None, path: Path) -> dict | None:
    """Its booster's JSON at ``path`` (none for a constant or no classifier); its metadata."""
    if classifier is not None and classifier.constant_ is None:
        classifier.booster_.get_booster().save_model(str(path))
    else:
        path.unlink(missing_ok=True)
    if classifier is None:
        return None
    return {"params": classifier.params, "constant": classifier.constant_}


def _load_classifier(metadata: dict, path: Path) -> CandidateClassifier:
    classifier = CandidateClassifier(**metadata["params"])
    classifier.constant_ = metadata["constant"]
    if classifier.constant_ is None:
        classifier.booster_ = _load_trees(path)
    return classifier


def _load_trees(path: Path) -> TreeEnsemble:
    try:
        return TreeEnsemble.load(path, cache=paths.cache_root() / "trees")
    except FileNotFoundError:
        raise InputError("model file missing", path=path) from None
    except (OSError, ValueError) as err:
        message = str(err).strip().splitlines()[0][:200]
        raise InputError(f"not an XGBoost JSON model ({message})", path=path) from None
