"""Where the data lives, read at call time: the corpus in use (tuning logs, transfer-benefit
dataset, models, evaluation state; see ``corpora``) and the model zoo, which always ships with
the checkout."""

from __future__ import annotations

import os
from pathlib import Path

from .configuration import Configuration
from .configuration import read as read_configuration

CHECKOUT = Path(__file__).resolve().parent.parent.parent


_IN_USE: list[Path] = []
_MODEL: list[Path] = []


def use_corpus(path: Path, model: Path | None = None) -> None:
    """Make ``path`` the corpus every default below refers to, and ``model`` (default: the
    corpus's own) the cost model (the CLI chooses both per command from its target, see
    ``corpora.choose``)."""
    _IN_USE[:] = [path]
    _MODEL[:] = [model] if model else []


def root() -> Path:
    """The corpus in use: the one set by ``use_corpus``, else ``$RECOMMENDER_HOME``, else the
    corpus chosen for this host."""
    if _IN_USE:
        return _IN_USE[0]
    if os.environ.get("RECOMMENDER_HOME"):
        return Path(os.environ["RECOMMENDER_HOME"])
    from .corpora import choose  # imports TVM: only when a corpus is needed
    from .targets import host_target

    choice = choose(host_target())
    use_corpus(choice.corpus.root, choice.model)
    return _IN_USE[0]


def configuration() -> Configuration:
    """How the corpus in use prepares networks (its ``corpus.json``): its logs' kernels were
    made so."""
    return read_configuration(root())


def zoo() -> Path:
    """The networks themselves (not machine-specific)."""
    return CHECKOUT / "datasets" / "zoo"


def logs() -> Path:
    """One MetaSchedule work dir per tuned network."""
    return root() / "datasets" / "logs"


def transfer() -> Path:
    """The transfer-benefit dataset."""
    return root() / "datasets" / "transfer"


def default_model() -> Path:
    return _MODEL[0] if _MODEL else root() / "models" / "default"


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
    return root() / "out" / f"evaluate{suffix}", root() / "docs" / f"results{suffix}.md"
