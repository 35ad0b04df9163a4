"""Train the shipped cost model and save it with what it was trained on: one procedure for the
``train`` command and the evaluation's held-out models."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import tvm

from . import model_files
from .cost_models import OBJECTIVE
from .evaluation import recall_curve
from .kernel_data import KernelData, without_source
from .training import check_trainable, train, training_set


def fit_and_save(
    kernels: list[KernelData],
    out_dir: Path,
    target: tvm.target.Target,
    *,
    describe: dict,
    exclude_source: str | None = None,
    objective: str = OBJECTIVE,
    what: str = "the transfer-benefit dataset",
    training_only: Collection[str] = (),
) -> model_files.CostModel:
    """Train on every applied candidate of ``kernels`` (minus those whose source is
    ``exclude_source``); save the model in ``out_dir`` as XGBoost JSON with its metadata:
    ``describe`` (where the data came from) plus the networks, kernels, candidates and hash of
    the training set, and the ranker's leave-one-model-out recall curve on the same rows (what
    budgets are spent by; ``training_only`` networks are not held out)."""
    data = training_set(kernels, exclude_source=exclude_source)
    check_trainable(data, what)
    model = train(data, objective=objective)
    model_files.save(
        model,
        out_dir,
        target=target,
        data={
            **describe,
            "networks": sorted({k.network for k in data.kernels}),
            "kernels": data.groups,
            "candidates": len(data.y),
            "hash": data.data_hash(),
        },
        evaluation=recall_curve(
            without_source(kernels, exclude_source) if exclude_source else kernels,
            objective=objective,
            training_only=training_only,
        ),
    )
    return model_files.load(out_dir, target=target)
