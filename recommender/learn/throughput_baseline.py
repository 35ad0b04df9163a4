"""The baseline to beat: a throughput model pre-trained on every record of the corpus logs.

TenSet's recipe with MetaSchedule's cost model: a regressor learns each program's normalised
throughput (best time of its workload / its time) from its per-store features, on every record
of every other network's log (the held-out network's log unseen, as in leave-one-model-out),
then scores each applied candidate of the held-out kernels by predicted throughput.

This is an approximation of MetaSchedule's ``XGBModel``, not ``XGBModel`` itself (design (b)
of issue 26): the same features (PerStoreFeature, 164 per store) but aggregated, mean and max
over the program's stores as ``features.store_features`` gives them, where ``XGBModel`` sums a
prediction per store (PackSum); the same labels (minimum cost / cost per workload); the same
XGBoost settings (``XGBConfig``: depth 10, eta 0.2, gamma 0.001, min child weight 0; squared
error weighted by the label, as PackSum's objective multiplies gradient and hessian by it; up
to 10000 rounds, stopping 50 rounds after the training RMSE last improved), one training per
held-out network rather than one per ``update`` call.

Why not the faithful design (a): the transfer-benefit dataset keeps only the mean and max of
each candidate's store features. Per-store features of the 11-15 thousand candidates of a
corpus's dataset would mean re-applying every candidate's source trace to its target task
(extracting every network's tasks, decoding each source, applying it at its exact or anchor
level: about 35 ms each here, with the tasks' extraction minutes more) and trusting that the
re-application gives the very program that was timed. With (b) the candidates are scored on the
columns of the programs that were measured, and only the corpus records need featurising.
(a) would need that re-application (``transfer.apply.apply_trace`` on tasks from
``tasks.extract.extract_tasks``, sources from ``logs.sources.load_sources`` matched by
``trace_key``, the level from ``l_anchor``) and a per-store cache of the candidates beside this
module's one of the records, then ``XGBModel``'s own ``_train`` on the records' FeatureGroups.

The records' features cost 12-19 ms each (a trace replay to decode the record, then
PerStoreFeature): 4232 records of three logs took 57 s on one busy core of the 2-core EPYC, so
a corpus of 25 thousand takes some 5-8 minutes. They are
cached per log under ``paths.cache_root()``, keyed by the log's content, the target and TVM's
version: an interrupted extraction resumes at the next log, and a log that grew is read again.
Failed records (MetaSchedule stores 1e10 s) are skipped: their label, and so their weight in
``XGBModel``'s objective, is zero.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tvm
import xgboost
from tqdm import tqdm
from tvm.s_tir import meta_schedule as ms

from ..core import paths
from ..core.errors import InputError
from ..core.targets import target_key
from ..logs.source_index import log_hash
from ..logs.tuning_log import FAILED_RUN_S, TuningLog
from .cost_models import THREADS, NotFittedError
from .features import FEATURE_NAMES, STORE_FEATURES, store_features

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1
STORE_COLUMNS = np.array([i for i, n in enumerate(FEATURE_NAMES) if n.startswith("t_m")])
WIDTH = 2 * STORE_FEATURES  # mean and max of PerStoreFeature
# MetaSchedule's XGBConfig and XGBModel defaults (TVM 0.27, cost_model/xgb_model.py)
XGB_CONFIG = {"max_depth": 10, "gamma": 0.001, "min_child_weight": 0.0, "learning_rate": 0.2}
MAX_ROUNDS, EARLY_STOPPING_ROUNDS = 10000, 50


@dataclass(frozen=True)
class RecordFeatures:
    """Every valid record of a corpus featurised on its home workload; rows line up.

    ``X`` has shape (n, 328): mean and max of PerStoreFeature over the program's stores, the
    dataset's ``t_mean_*``/``t_max_*`` columns. ``cost_s`` is the median measured time
    (seconds); ``workload`` numbers the (log, workload) groups labels are normalised in.
    """

    X: np.ndarray
    cost_s: np.ndarray
    workload: np.ndarray
    networks: np.ndarray  # the log (network) each record came from

    def without(self, networks: set[str]) -> RecordFeatures:
        """The records of every log but ``networks``' (the held-out networks)."""
        keep = ~np.isin(self.networks, sorted(networks))
        return RecordFeatures(
            self.X[keep], self.cost_s[keep], self.workload[keep], self.networks[keep]
        )

    def labels(self) -> np.ndarray:
        """Normalised throughput: the workload's minimum cost / the record's cost."""
        best = np.full(self.workload.max() + 1 if len(self.workload) else 0, np.inf)
        np.minimum.at(best, self.workload, self.cost_s)
        return best[self.workload] / self.cost_s


class PretrainedThroughput:
    """XGBoost regression of normalised throughput on aggregated store features (an
    approximation of MetaSchedule's ``XGBModel``, see the module docstring).

    ``fit(X, y, *, qid)`` and ``predict(X)`` take shape (n, 328) store features; ``qid`` (the
    workload groups) is only checked, the labels being normalised within them already.
    """

    name = "pretrained-throughput"

    def __init__(self, *, max_rounds: int = MAX_ROUNDS, random_state: int = 43):
        self.max_rounds = max_rounds
        self.random_state = random_state

    def fit(self, X, y, *, qid) -> PretrainedThroughput:
        X, y = _check_store_features(X), np.asarray(y, dtype=np.float64)
        if len(y) != len(X) or len(qid) != len(X):
            raise ValueError(f"y has {len(y)} and qid {len(qid)} values for {len(X)} samples")
        if not len(X):
            raise InputError("no corpus records to pre-train the throughput model on")
        self.booster_ = xgboost.XGBRegressor(
            **XGB_CONFIG,
            n_estimators=self.max_rounds,
            early_stopping_rounds=EARLY_STOPPING_ROUNDS,
            eval_metric="rmse",
            tree_method="hist",
            n_jobs=THREADS,
            random_state=self.random_state,
        )
        self.booster_.fit(X, y, sample_weight=y, eval_set=[(X, y)], verbose=False)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        """Predicted normalised throughput, shape (n_samples,); higher is faster."""
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError("this PretrainedThroughput is not fitted yet; call fit first")
        return self.booster_.predict(_check_store_features(X)).astype(np.float64)


def _check_store_features(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != WIDTH:
        raise ValueError(
            f"X must have shape (n_samples, {WIDTH}) (mean and max of PerStoreFeature). "
            f"Got {X.shape} instead; take a dataset's with store_columns(X)."
        )
    return X


def store_columns(X: np.ndarray) -> np.ndarray:
    """The ``t_mean_*``/``t_max_*`` columns of dataset feature rows: shape (n, 328)."""
    return np.asarray(X)[:, STORE_COLUMNS]


def fit_without(records: RecordFeatures, held_out: set[str], **params) -> PretrainedThroughput:
    """The baseline pre-trained on every record but the ``held_out`` networks' logs."""
    train = records.without(held_out)
    return PretrainedThroughput(**params).fit(train.X, train.labels(), qid=train.workload)


def corpus_logs(directory: Path) -> dict[str, Path]:
    """The tuning logs of a corpus's ``datasets/logs``: network name -> work dir."""
    logs = {d.name: d for d in sorted(directory.iterdir()) if (d / "provenance.json").exists()}
    if not logs:
        raise InputError("no tuning logs (work dirs with provenance.json) here", path=directory)
    return logs


def record_features(
    logs: dict[str, Path],
    target: tvm.target.Target,
    *,
    cache: Path | None = None,
    progress: bool = True,
) -> RecordFeatures:
    """Every valid record of ``logs`` featurised at home, from the cache where it holds them.

    One cache file per log (``cache`` defaults to ``paths.cache_root() / "throughput"``); a
    missing, stale or unreadable one is recomputed (with a progress bar) and written whole.
    """
    cache = cache or paths.cache_root() / "throughput"
    opened = {
        name: TuningLog.open(path, target=target, other_cpu=True) for name, path in logs.items()
    }
    parts, todo = {}, {}
    for name, log in opened.items():
        path = cache / f"{_cache_key(log, target)}.npz"
        parts[name] = _read_cache(path)
        if parts[name] is None:
            todo[name] = (log, path)
    pending = sum(_valid_count(log) for log, _ in todo.values())
    with tqdm(total=pending, desc="store features", unit="rec", disable=not progress) as bar:
        for name, (log, path) in todo.items():
            bar.set_postfix_str(name)
            parts[name] = _extract(log, target, bar)
            _write_cache(path, *parts[name])
    X, cost, workload, networks, offset = [], [], [], [], 0
    for name in logs:
        x, c, w = parts[name]
        X.append(x)
        cost.append(c)
        workload.append(w + offset)
        networks.append(np.full(len(c), name, dtype=object))
        offset += int(w.max()) + 1 if len(w) else 0
    return RecordFeatures(
        np.concatenate(X).reshape(-1, WIDTH),
        np.concatenate(cost),
        np.concatenate(workload).astype(int),
        np.concatenate(networks),
    )


def _cache_key(log: TuningLog, target: tvm.target.Target) -> str:
    parts = [
        log_hash(log.path),
        json.dumps(target_key(target), sort_keys=True),
        str(target),
        tvm.__version__,
        str(WIDTH),
        str(CACHE_FORMAT),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]


Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]  # features, cost (s), workload index


def _read_cache(path: Path) -> Arrays | None:
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            X, cost, workload = data["X"], data["cost_s"], data["workload"]
    except (OSError, ValueError, KeyError, EOFError) as err:
        logger.warning("%s: unreadable throughput-feature cache, recomputing (%s)", path, err)
        return None
    if X.ndim != 2 or X.shape[1] != WIDTH or not len(X) == len(cost) == len(workload):
        logger.warning("%s: throughput-feature cache of another shape, recomputing", path)
        return None
    return X, cost, workload


def _write_cache(path: Path, X: np.ndarray, cost: np.ndarray, workload: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
    np.savez(tmp, X=X, cost_s=cost, workload=workload)
    tmp.replace(path)


def _valid_records(log: TuningLog) -> dict[int, list[tuple[float, list]]]:
    """The log's records that ran, by workload index: (median time in s, record JSON)."""
    by_workload: dict[int, list[tuple[float, list]]] = defaultdict(list)
    for line in log.records_path.read_text().splitlines():
        if not line.strip():
            continue
        index, record = json.loads(line)
        secs = [float(s) for s in record[1] or []]
        if secs and (run_s := float(np.median(secs))) < FAILED_RUN_S:
            by_workload[index].append((run_s, record))
    return by_workload


def _valid_count(log: TuningLog) -> int:
    return sum(len(r) for r in _valid_records(log).values())


def _extract(log: TuningLog, target: tvm.target.Target, bar: tqdm) -> Arrays:
    """Decode each valid record on its workload (a trace replay) and featurise its program."""
    workloads = [line for line in log.workloads_path.read_text().splitlines() if line.strip()]
    X, cost, workload = [], [], []
    for index, records in sorted(_valid_records(log).items()):
        home = ms.database.Workload.from_json(json.loads(workloads[index]))
        schedules, times = [], []
        for run_s, record in records:
            try:
                decoded = ms.database.TuningRecord.from_json(record, home)
            except (
                RuntimeError
            ) as err:  # TVM's errors: a trace it cannot replay, nothing to describe
                logger.info("%s: record of workload %d not decoded (%s)", log.path, index, err)
                continue
            schedules.append(decoded.as_measure_candidate().sch)
            times.append(run_s)
        X.append(store_features(home.mod, schedules, target))
        cost.extend(times)
        workload.extend([index] * len(times))
        bar.update(len(records))
    return (
        np.nan_to_num(np.concatenate(X).reshape(-1, WIDTH) if X else np.zeros((0, WIDTH))),
        np.asarray(cost, dtype=np.float64),
        np.asarray(workload, dtype=int),
    )
