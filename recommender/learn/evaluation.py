"""Leave-one-model-out evaluation of the ranking models on the transfer-benefit dataset.

For each held-out network, every learner is trained on the other networks' kernels, without
the rows whose source schedule came from the held-out network, and ranks the held-out kernels'
candidates (which come from the other networks' logs only). Metrics per network:

- ``top{k}``: oracle / achieved time, weighted by the kernel's share of untuned network time.
  Achieved = the best of the untuned kernel and the valid candidates among the top k (what the
  recommender keeps after timing k); oracle = the same over all candidates (what exhaustive
  transfer-tuning, the paper's method, keeps after timing all). 1.0 = as good as timing all.
- ``recall@k``: the truly fastest candidate is among the top k.
- ``hit@k``: a candidate among the top k runs within ``TIE`` of the fastest: as fast as it, within
  the timing noise (candidates a few percent apart swap places between two timings; where several
  are, ``recall@k`` asks the ranker to predict the noise).
- ``pairwise``: share of candidate pairs (both valid, times > 2% apart) ordered correctly.
- ``ndcg@5``: of the normalised throughput.
- the classifiers: precision and recall of P > 0.5 on the held-out candidates, of a failure
  and of a candidate slower than the untuned kernel; what the latter does to untimed choices
  per kernel kind (``untimed``).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import ndcg_score
from tqdm import tqdm

from ..core.errors import InputError
from .cost_models import OBJECTIVE, SCREEN_KEEP, CandidateClassifier
from .kernel_data import KernelData, without_source
from .levels import first_pick_anchor, pool_levels
from .throughput_baseline import RecordFeatures, fit_without, store_columns
from .training import TrainingSet, check_trainable, fit_ranker, training_set
from .untimed import summary, untimed_picks

LEARNERS: dict[str, tuple[str, dict]] = {
    "xgb-pairwise": ("xgb", {"objective": "rank:pairwise"}),
    "xgb-ndcg": ("xgb", {"objective": "rank:ndcg"}),
    "xgb-regression": ("xgb", {"objective": "reg:squarederror"}),
    "xgb-ndcg-two-stage": ("two-stage", {"objective": "rank:ndcg", "keep": SCREEN_KEEP}),
    "sklearn-hgb": ("sklearn", {}),
    "nearest-shape": ("nearest-shape", {}),
    "best-home": ("best-home", {}),
    "random": ("random", {}),
}
# MetaSchedule's cost model pre-trained on the corpus logs (an approximation, see
# throughput_baseline); needs the logs' records, so ``with_throughput_baseline`` adds it
THROUGHPUT = "pretrained-throughput"
KS = tuple(range(1, 11))
TIE = 0.02  # times closer than this are noise, not an order to predict


@dataclass
class HeldOut:
    network: str
    kernels: int
    candidates: int
    learners: dict[str, dict[str, float]] = field(default_factory=dict)
    failure: dict[str, float] = field(default_factory=dict)  # ``classifier_metrics``
    slower: dict[str, float] = field(default_factory=dict)  # the same, slower than untuned
    levels: dict[str, float] = field(default_factory=dict)  # ``pool_levels``
    untimed: dict[str, dict] = field(default_factory=dict)  # per learner: ``untimed_picks``


def kernel_metrics(kernel: KernelData, run_s: np.ndarray, scores: np.ndarray) -> dict | None:
    """Metrics of one kernel's ranking; ``run_s`` is NaN for failed candidates."""
    ok = np.isfinite(run_s)
    untuned = kernel.untuned_s if math.isfinite(kernel.untuned_s) else math.inf
    oracle = min(untuned, run_s[ok].min()) if ok.any() else untuned
    if not math.isfinite(oracle):
        return None
    order = np.argsort(-scores, kind="stable")
    metrics: dict[str, float] = {}
    for k in KS:
        top = order[:k]
        valid = run_s[top][ok[top]]
        metrics[f"top{k}"] = oracle / min(untuned, valid.min() if valid.size else math.inf)
    if ok.any():
        best = np.flatnonzero(ok)[np.argmin(run_s[ok])]
        position = int(np.flatnonzero(order == best)[0])
        near = run_s[order] <= run_s[best] * (1 + TIE)  # NaN (failed) compares False
        for k in KS:
            metrics[f"recall@{k}"] = float(position < k)
            metrics[f"hit@{k}"] = float(near[:k].any())
    pairs = correct = 0.0
    valid = np.flatnonzero(ok)
    for a in range(len(valid)):
        for b in range(a + 1, len(valid)):
            i, j = valid[a], valid[b]
            if abs(run_s[i] - run_s[j]) <= TIE * min(run_s[i], run_s[j]):
                continue
            pairs += 1
            agree = (scores[i] - scores[j]) * (run_s[j] - run_s[i])
            correct += 1.0 if agree > 0 else 0.5 if agree == 0 else 0.0
    if pairs:
        metrics["pairwise"] = correct / pairs
    if len(run_s) >= 2 and ok.any():
        relevance = np.where(ok, oracle / np.where(ok, run_s, 1.0), 0.0)
        metrics["ndcg@5"] = float(ndcg_score([relevance], [scores], k=5))
    return metrics


def network_metrics(test: TrainingSet, scores: np.ndarray) -> dict[str, float]:
    """Per-kernel metrics averaged: scores weighted by untuned time share, the rest plainly."""
    per_kernel, weights = [], []
    for group, kernel in enumerate(test.kernels):
        rows = test.rows(group)
        metrics = kernel_metrics(kernel, test.run_s[rows], scores[rows])
        if metrics is not None:
            per_kernel.append(metrics)
            weights.append(kernel.weight * kernel.untuned_s)
    result = {}
    names = sorted({name for metrics in per_kernel for name in metrics})
    for name in names:
        have = [(m[name], w) for m, w in zip(per_kernel, weights) if name in m]
        values = np.array([v for v, _ in have])
        if name.startswith("top"):
            result[name] = float(np.average(values, weights=[w for _, w in have]))
        else:
            result[name] = float(values.mean())
    return result


def classifier_metrics(
    train: TrainingSet, test: TrainingSet, label: str
) -> tuple[dict[str, float], np.ndarray]:
    """The classifier of ``label`` (``failed`` or ``slower``) fitted on ``train``: how many of
    ``test``'s candidates are positive, precision and recall of P > 0.5, and P per candidate."""
    p = CandidateClassifier().fit(train.X, getattr(train, label)).predict_proba(test.X)
    predicted, truth = p > 0.5, getattr(test, label)
    hits = float((predicted & truth).sum())
    return {
        "positives": int(truth.sum()),
        "candidates": len(truth),
        "precision": hits / predicted.sum() if predicted.any() else math.nan,
        "recall": hits / truth.sum() if truth.any() else math.nan,
    }, p


def leave_one_model_out(
    kernels: list[KernelData],
    learners: dict[str, tuple[str, dict]] | None = None,
    *,
    training_only: Collection[str] = (),
    pooled: Collection[KernelData] = (),
    progress: bool = False,
) -> list[HeldOut]:
    """Hold out each network in turn but the ``training_only`` ones (the dataset's training
    targets, ``dataset.training_targets``: measured as targets only, never evaluated); see the
    module docstring for the protocol. ``pooled``: other CPUs' kernels, trained on (without the
    held-out network there too), never scored."""
    learners = learners or LEARNERS
    evaluated = _evaluated(kernels, training_only)
    bar = tqdm(evaluated, desc="leave-one-model-out", unit="network", disable=not progress)
    held = (_hold_out(kernels, n, learners, pooled) for n in bar)
    results = [h for h in held if h is not None]
    if not results:
        raise InputError(
            "no network could be held out: the dataset needs kernels of at least two networks "
            "with applied candidates"
        )
    return results


def _evaluated(kernels: list[KernelData], training_only: Collection[str]) -> list[str]:
    return sorted({k.network for k in kernels} - set(training_only))


def _hold_out(
    kernels: list[KernelData],
    network: str,
    learners: dict[str, tuple[str, dict]],
    pooled: Collection[KernelData] = (),
) -> HeldOut | None:
    """Every learner trained without ``network`` (its kernels and its sources, in ``pooled``
    too) and scored on it; None when either side is too small."""
    rest = [k for k in (*kernels, *pooled) if k.network != network]
    train = training_set(rest, exclude_source=network)
    test = training_set([k for k in kernels if k.network == network])
    try:
        check_trainable(train, f"leaving out {network}, the training data")
    except InputError:
        return None
    if not test.groups:
        return None
    held = HeldOut(network, test.groups, len(test.y), levels=pool_levels(test))
    held.failure, _ = classifier_metrics(train, test, "failed")
    held.slower, p_slower = classifier_metrics(train, test, "slower")
    for label, (name, params) in learners.items():
        scores = _scores(name, params, train, test)
        held.learners[label] = network_metrics(test, scores)
        held.learners[label]["first_pick_anchor"] = first_pick_anchor(test, scores)
        held.untimed[label] = untimed_picks(test, scores, p_slower)
    return held


@dataclass
class NestedHeldOut:
    """One outer fold of ``nested_leave_one_model_out``: the setting chosen without
    ``network``, each setting's inner score, and the chosen one's metrics on ``network``."""

    network: str
    chosen: str
    inner: dict[str, float]
    metrics: dict[str, float]


def nested_leave_one_model_out(
    kernels: list[KernelData],
    settings: dict[str, tuple[str, dict]],
    *,
    score: str = "top1",
    training_only: Collection[str] = (),
) -> list[NestedHeldOut]:
    """Settings chosen without the network they are scored on.

    Picking the setting with the best leave-one-model-out score and quoting that score is
    optimistic: the held-out networks chose it. Here, for each held-out network, every setting
    is scored by leave-one-model-out over the other networks (minus the rows whose source is the
    held-out network), the best by ``score`` is trained on them all and scored on the held-out
    network. The mean of those is an honest estimate of "choose a setting, then rank"; how often
    the folds agree on the choice says how stable it is.
    """
    if len(settings) < 2:
        raise InputError(f"nested selection needs two settings or more, got {len(settings)}")
    folds = []
    for network in _evaluated(kernels, training_only):
        rest = without_source([k for k in kernels if k.network != network], network)
        try:
            inner = mean_metrics(leave_one_model_out(rest, settings, training_only=training_only))
        except InputError:
            continue  # too few networks left to choose by
        chosen = max(settings, key=lambda label: inner[label].get(score, -math.inf))
        held = _hold_out(kernels, network, {chosen: settings[chosen]})
        if held is not None:
            scores = {label: metrics[score] for label, metrics in inner.items()}
            folds.append(NestedHeldOut(network, chosen, scores, held.learners[chosen]))
    if not folds:
        raise InputError("no network could be held out with two or more networks left to choose by")
    return folds


def with_throughput_baseline(
    records: RecordFeatures, learners: dict[str, tuple[str, dict]] | None = None
) -> dict[str, tuple[str, dict]]:
    """``learners`` (default ``LEARNERS``) and the pre-trained throughput baseline, trained on
    ``records`` (``throughput_baseline.record_features`` of the corpus logs)."""
    return {
        **(learners or LEARNERS),
        "ms-xgb-throughput-approx": (THROUGHPUT, {"records": records}),
    }


def _scores(name: str, params: dict, train: TrainingSet, test: TrainingSet) -> np.ndarray:
    """A learner's scores of the test candidates; ``two-stage`` ranks as the recommender does:
    the screen ranker's ``keep`` best of each kernel by the full ranker, then the rest. The
    throughput baseline ignores ``train``: it learns from the records of every log but the
    held-out networks'."""
    if name == THROUGHPUT:
        params = dict(params)
        held_out = {k.network for k in test.kernels}
        return fit_without(params.pop("records"), held_out, **params).predict(store_columns(test.X))
    if name != "two-stage":
        return fit_ranker(name, train, **params).predict(test.X, qid=test.qid)
    params = dict(params)
    keep = params.pop("keep")
    screen = fit_ranker("xgb", train, **params, screen=True).predict(test.X, qid=test.qid)
    kept = np.zeros(len(test.X), dtype=bool)
    for group in range(test.groups):
        rows = test.rows(group)
        kept[rows[np.argsort(-screen[rows], kind="stable")[:keep]]] = True
    # the second stage sees the kept candidates only, as in the recommender
    full = fit_ranker("xgb", train, **params).predict(test.X[kept], qid=test.qid[kept])
    scores = np.empty(len(test.X))
    scores[kept] = full
    dropped = np.flatnonzero(~kept)
    scores[dropped] = full.min() - 1.0 - np.arange(len(dropped))  # after all kept
    return scores


def mean_metrics(results: list[HeldOut]) -> dict[str, dict[str, float]]:
    """Mean over held-out networks, per learner."""
    means = {}
    for label in results[0].learners:
        names = results[0].learners[label]
        means[label] = {
            name: float(np.nanmean([r.learners[label].get(name, math.nan) for r in results]))
            for name in names
        }
    return means


def worst_networks(results: list[HeldOut], metric: str = "top1") -> dict[str, tuple[str, float]]:
    """Per learner, the held-out network it ranks worst by ``metric``, and its score: a mean
    over 11 networks hides the one a user may be deploying."""
    worst = {}
    for label in results[0].learners:
        held = min(results, key=lambda r: r.learners[label].get(metric, math.inf))
        worst[label] = (held.network, held.learners[label].get(metric, math.nan))
    return worst


def recall_curve(
    kernels: list[KernelData],
    *,
    objective: str = OBJECTIVE,
    training_only: Collection[str] = (),
) -> dict:
    """What a saved model knows of its ranker, from leave-one-model-out (empty with one
    network): recall@k, k = 1..10 (budgets spend by it) and the untimed picks per kernel kind."""
    learner = {"xgb": ("xgb", {"objective": objective})}
    try:
        results = leave_one_model_out(kernels, learner, training_only=training_only)
    except InputError:
        return {}
    means = mean_metrics(results)["xgb"]
    return {
        "networks": [r.network for r in results],
        "recall_curve": [round(means.get(f"recall@{k}", math.nan), 4) for k in KS],
        "top1": round(means["top1"], 4),
        "untimed": summary([r.untimed["xgb"] for r in results]),
    }
