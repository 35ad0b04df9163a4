"""One target kernel's measured candidates as arrays: the unit the dataset stores and the
cost model trains on (rows line up: features, times, status, source)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..backend.measure import Stage
from ..core.errors import InputError
from .features import FEATURE_NAMES, SCHEMA_VERSION

STATUSES = tuple(Stage)  # ``status`` codes: positions in this tuple


def _exact_level(features: np.ndarray) -> np.ndarray:
    """Schema 1 -> 2: the level columns come last; every schema-1 row is an exact transfer
    (same blocks, same pad: all four are zero)."""
    extra = len(FEATURE_NAMES) - features.shape[1]
    return np.hstack([features, np.zeros((features.shape[0], extra))])


MIGRATES = {1: _exact_level, SCHEMA_VERSION: lambda features: features}  # schema: to current


@dataclass(frozen=True)
class KernelData:
    """One target kernel's candidates: rows of ``features`` line up with ``run_s``/``status``.

    ``run_s`` is NaN where the candidate failed; ``status`` indexes ``STATUSES``. Failed
    applications have all-zero features (there is no program to describe).
    """

    network: str
    task: str
    kernel_class: str
    weight: int
    untuned_s: float
    features: np.ndarray
    run_s: np.ndarray
    status: np.ndarray
    sources: list[str]  # display labels of the source records
    records: list[str] = field(default_factory=list)  # source trace keys; empty in old files
    source_models: list[str] = field(default_factory=list)  # each row's source network

    @property
    def best_s(self) -> float:
        """Best time known for this kernel: the fastest valid candidate, or untuned."""
        valid = self.run_s[np.isfinite(self.run_s)]
        return float(min(valid.min(), self.untuned_s)) if valid.size else self.untuned_s

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(
            tmp,
            features=self.features,
            run_s=self.run_s,
            status=self.status,
            meta=json.dumps(
                {
                    "network": self.network,
                    "task": self.task,
                    "kernel_class": self.kernel_class,
                    "weight": self.weight,
                    "untuned_s": self.untuned_s,
                    "sources": self.sources,
                    "records": self.records,
                    "source_models": self.source_models,
                    "schema": SCHEMA_VERSION,
                }
            ),
        )
        tmp.replace(path)

    def rows(self, keep: np.ndarray) -> KernelData:
        """The candidates where ``keep`` (a boolean mask over rows) holds."""
        picked = np.flatnonzero(keep)
        return dataclasses.replace(
            self,
            features=self.features[picked],
            run_s=self.run_s[picked],
            status=self.status[picked],
            sources=[self.sources[i] for i in picked],
            records=[self.records[i] for i in picked] if self.records else [],
            source_models=[self.source_models[i] for i in picked],
        )

    @classmethod
    def merge(cls, parts: list[KernelData]) -> KernelData:
        """One kernel's candidates from several parts (source models, or one source model's
        records measured at different times); untuned = median of its measurements (each part
        timed it with its own candidates)."""
        if len(parts) == 1:
            return parts[0]
        untuned = [p.untuned_s for p in parts if np.isfinite(p.untuned_s)]
        first = parts[0]
        return cls(
            network=first.network,
            task=first.task,
            kernel_class=first.kernel_class,
            weight=first.weight,
            untuned_s=float(np.median(untuned)) if untuned else float("nan"),
            features=np.concatenate([p.features for p in parts]),
            run_s=np.concatenate([p.run_s for p in parts]),
            status=np.concatenate([p.status for p in parts]),
            sources=[s for p in parts for s in p.sources],
            records=[r for p in parts for r in p.records],
            source_models=[m for p in parts for m in p.source_models],
        )

    @classmethod
    def load(cls, path: Path) -> KernelData:
        try:
            with np.load(path) as data:
                meta = json.loads(str(data["meta"]))
                arrays = {k: data[k] for k in ("features", "run_s", "status")}
        except (OSError, ValueError, KeyError) as err:
            raise InputError(f"not a dataset kernel file ({err})", path=path) from None
        schema = meta.pop("schema", None)
        if schema not in MIGRATES:
            raise InputError(
                f"feature schema {schema}, expected {SCHEMA_VERSION}; rebuild it", path=path
            )
        arrays["features"] = MIGRATES[schema](arrays["features"])
        if "source_models" not in meta:  # files before it was stored: one source network a file
            meta["source_models"] = [path.stem.split("-", 1)[1]] * len(arrays["run_s"])
        return cls(**meta, **arrays)


def without_source(kernels: list[KernelData], network: str) -> list[KernelData]:
    """The rows whose source schedule did not come from ``network`` (leave-one-model-out)."""
    return [k.rows(np.array([m != network for m in k.source_models], dtype=bool)) for k in kernels]
