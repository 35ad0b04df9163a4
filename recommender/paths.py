"""Where the shipped data lives: ``datasets/`` and ``models/`` beside the package."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(os.environ.get("RECOMMENDER_HOME", Path(__file__).resolve().parent.parent))
DATASETS = ROOT / "datasets"
ZOO = DATASETS / "zoo"
LOGS = DATASETS / "logs"
TRANSFER = DATASETS / "transfer"  # the transfer-benefit dataset
MODELS = ROOT / "models"
DEFAULT_MODEL = MODELS / "default"
