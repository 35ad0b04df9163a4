"""From the transfer-benefit dataset to training arrays and a fitted ``CostModel``.

One query group per target kernel. Only applied candidates are rows: a failed application is
known before any measurement, so there is nothing to predict about it. Labels:

- ``y``: normalised throughput, best known time of the kernel (untuned included) / candidate
  time, 0 for a candidate that failed to build, verify or run;
- ``failed``: that failure, for the failure classifier;
- ``slower``: failed, or ran no faster than the kernel's untuned loops, for the classifier that
  keeps an untimed choice from making a kernel slower (``untimed``). Where the untuned kernel has
  no time (it failed or timed out), only a failure is slower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..backend.measure import Stage
from ..core.errors import InputError
from . import cost_models, model_files
from .cost_models import CandidateClassifier
from .features import FEATURE_NAMES
from .kernel_data import KernelData
from .model_files import CostModel

MIN_GROUPS = 2  # ranking needs at least two kernels with two applied candidates each


@dataclass(frozen=True)
class TrainingSet:
    X: np.ndarray
    y: np.ndarray
    run_s: np.ndarray  # measured time, NaN where the candidate failed
    qid: np.ndarray
    failed: np.ndarray
    slower: np.ndarray
    kernels: list[KernelData]  # group ``i`` of ``qid`` is ``kernels[i]``

    @property
    def groups(self) -> int:
        return len(self.kernels)

    def rows(self, group: int) -> np.ndarray:
        return np.flatnonzero(self.qid == group)

    def data_hash(self) -> str:
        return model_files.data_hash(self.X, self.y, self.qid)


def applied_rows(kernel: KernelData) -> np.ndarray:
    return np.flatnonzero(kernel.status != Stage.APPLY.code)


def training_set(kernels: list[KernelData], *, exclude_source: str | None = None) -> TrainingSet:
    """Rows of every applied candidate, minus those whose source model is ``exclude_source``."""
    X, y, run, qid, failed, slower, kept = [], [], [], [], [], [], []
    for kernel in kernels:
        rows = [i for i in applied_rows(kernel) if kernel.source_models[i] != exclude_source]
        if not rows:
            continue
        run_s = kernel.run_s[rows]
        ok = np.isfinite(run_s)
        X.append(kernel.features[rows])
        y.append(np.where(ok, kernel.best_s / np.where(ok, run_s, 1.0), 0.0))
        run.append(run_s)
        failed.append(~ok)
        untuned = kernel.untuned_s if math.isfinite(kernel.untuned_s) else math.inf
        slower.append(~(run_s < untuned))  # NaN (failed) compares False
        qid.append(np.full(len(rows), len(kept)))
        kept.append(kernel)
    if not kept:
        empty = np.zeros(0)
        X0 = np.zeros((0, len(FEATURE_NAMES)))
        return TrainingSet(X0, empty, empty, empty.astype(int), empty > 0, empty > 0, [])
    arrays = (np.concatenate(a) for a in (X, y, run, qid, failed, slower))
    return TrainingSet(*arrays, kept)


def check_trainable(data: TrainingSet, what: str) -> None:
    rankable = sum(len(data.rows(g)) >= 2 for g in range(data.groups))
    if rankable < MIN_GROUPS:
        raise InputError(
            f"{what} has {rankable} kernel(s) with two or more applied candidates; "
            f"training needs at least {MIN_GROUPS}. Build a larger dataset "
            "(`recommender dataset build` over more logged networks)."
        )


def fit_ranker(name: str, data: TrainingSet, **params):
    check_trainable(data, "the training data")
    return cost_models.create(name, **params).fit(data.X, data.y, qid=data.qid)


def train(data: TrainingSet, **params) -> CostModel:
    """The shippable cost model: an XGBoost ranker, the first-stage screen ranker (the same
    settings on the columns known before applying), a failure classifier and the classifier of
    candidates slower than the untuned kernel."""
    ranker = fit_ranker("xgb", data, **params)
    screen = fit_ranker("xgb", data, **params, screen=True)
    failure = CandidateClassifier().fit(data.X, data.failed)
    slower = CandidateClassifier().fit(data.X, data.slower)
    return CostModel(ranker, failure, screen=screen, slower=slower)
