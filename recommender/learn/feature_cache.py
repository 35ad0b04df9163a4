"""A disk cache of each candidate's apply outcome and feature row, so ranking again is cheap.

Ranking a network applies and featurises every same-class source schedule (about 20 ms each,
some 700 for ResNet-50). A rerun (another budget, another ``--top-k``, the evaluation's many
methods) finds them here and applies only the candidates it goes on to measure.

One file per target kernel. Its name hashes everything a row depends on besides the source:
the kernel's structure, the target, TVM's version and the feature schema. Inside, a row is
keyed by the source record itself (model, workload, hash of the record's JSON, rank, family
match). A stale key cannot be read back; a corrupt or foreign file is recomputed, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import tvm

from ..core import paths
from ..core.targets import target_key
from ..logs.sources import SourceSchedule
from ..tasks.extract import Task
from .features import FEATURE_NAMES, SCHEMA_VERSION

logger = logging.getLogger(__name__)


def candidate_key(source: SourceSchedule, same_family: bool) -> str:
    return f"{source.id.key}:{source.rank}:{int(same_family)}"


Entry = tuple[str | None, np.ndarray | None]  # (apply failure reason, feature row if it applies)


class FeatureCache:
    """Apply outcomes and feature rows of candidates, one ``.npz`` per target kernel."""

    def __init__(self, root: Path | None = None):
        self.root = root or paths.cache_root()

    def _path(self, task: Task, target: tvm.target.Target) -> Path:
        parts = [
            task.structural_key,
            json.dumps(target_key(target), sort_keys=True),
            str(target),
            tvm.__version__,
            str(SCHEMA_VERSION),
        ]
        digest = hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]
        return self.root / f"{digest}.npz"

    def load(self, task: Task, target: tvm.target.Target) -> dict[str, Entry]:
        """Every cached entry for ``task``; empty when there is none or the file is unusable."""
        path = self._path(task, target)
        if not path.exists():
            return {}
        try:
            with np.load(path, allow_pickle=False) as data:
                keys, reasons, rows = data["keys"], data["reasons"], data["rows"]
        except (OSError, ValueError, KeyError) as err:
            logger.warning("%s: unreadable feature cache entry, recomputing (%s)", path, err)
            return {}
        if rows.ndim != 2 or rows.shape[1] != len(FEATURE_NAMES) or len(keys) != len(rows):
            logger.warning("%s: feature cache entry of another shape, recomputing", path)
            return {}
        return {
            str(k): (str(r), None) if r else (None, row) for k, r, row in zip(keys, reasons, rows)
        }

    def store(self, task: Task, target: tvm.target.Target, entries: dict[str, Entry]) -> None:
        """Merge ``entries`` into the kernel's file (written whole, then renamed into place)."""
        if not entries:
            return
        merged = {**self.load(task, target), **entries}
        width = len(FEATURE_NAMES)
        keys = list(merged)
        reasons = [merged[k][0] or "" for k in keys]
        rows = [merged[k][1] if merged[k][1] is not None else np.zeros(width) for k in keys]
        path = self._path(task, target)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(
            tmp,
            keys=np.asarray(keys, dtype=str),
            reasons=np.asarray(reasons, dtype=str),
            rows=np.asarray(rows, dtype=np.float64).reshape(len(keys), width),
        )
        tmp.replace(path)
