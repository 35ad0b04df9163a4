"""Where the data lives: ``datasets/`` and ``models/`` beside the package, or under
``$RECOMMENDER_HOME`` (a corpus rebuilt for another machine); the model zoo always ships here."""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
ROOT = Path(os.environ.get("RECOMMENDER_HOME", CHECKOUT))
DATASETS = ROOT / "datasets"
ZOO = CHECKOUT / "datasets" / "zoo"  # the networks themselves, not machine-specific
LOGS = DATASETS / "logs"
TRANSFER = DATASETS / "transfer"  # the transfer-benefit dataset
MODELS = ROOT / "models"
DEFAULT_MODEL = MODELS / "default"


def cache_root() -> Path:
    """``$RECOMMENDER_CACHE``, else ``$XDG_CACHE_HOME/tvm-recommender`` (``~/.cache``): what is
    recomputed when lost (extracted tasks, feature rows)."""
    if os.environ.get("RECOMMENDER_CACHE"):
        return Path(os.environ["RECOMMENDER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tvm-recommender"


def evaluation_outputs(profile: str = "server", quick: bool = False) -> tuple[Path, Path]:
    """The state directory and results page of an evaluation: one pair per profile and mode, so
    a quick check (fewer methods, a coarser MetaSchedule curve) never overwrites the full run."""
    suffix = ("" if profile == "server" else f"_{profile}") + ("_quick" if quick else "")
    return ROOT / "out" / f"evaluate{suffix}", ROOT / "docs" / f"results{suffix}.md"
