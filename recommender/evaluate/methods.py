"""The methods the evaluation compares: the paper's exhaustive transfer and the recommender at
several budgets, each a way of choosing schedules for a held-out network."""

from __future__ import annotations

from dataclasses import dataclass

from ..recommend.search import Budget
from ..transfer.apply import Level
from ..transfer.candidate import LEVELS


@dataclass(frozen=True)
class Method:
    """One way of choosing schedules: the paper's exhaustive transfer (no budget) or the
    recommender within ``budget``; ``label`` says what it is on the results page.

    ``formerly``: names this method's state was written under by earlier versions, so that a
    renamed method keeps its finished searches and old results read under the new name.
    """

    name: str
    sources: str  # "paper" (the paper's fixed source network) or "all" (every other one)
    label: str
    budget: Budget | None = None
    top_n: int = 1  # records per source workload
    levels: tuple[Level, ...] = LEVELS  # exact only: the paper's algorithm as published
    formerly: tuple[str, ...] = ()

    def to_json(self) -> dict:
        budget = self.budget.to_json() if self.budget else "every candidate"
        return {
            "name": self.name,
            "sources": self.sources,
            "budget": budget,
            "top_n": self.top_n,
            "levels": [level.value for level in self.levels],
        }

    def made(self, stored: dict | None) -> bool:
        """Whether ``stored`` (a search report's ``method``) describes this method, under its
        name or a former one. Reports written before the anchor level existed carry no
        ``levels``: they were exact-only."""
        if stored is None:
            return False
        stored = {"levels": [Level.EXACT.value], **stored}
        if stored.get("name") in self.formerly:
            stored["name"] = self.name
        return stored == self.to_json()


POOL = "3 records per source workload, exact and anchor level"  # what the recommender ranks
METHODS = {
    m.name: m
    for m in (
        Method(
            "transfer-paper",
            "paper",
            "the paper's transfer-tuning: its fixed source network, the best record per source "
            "workload, exact class, every candidate timed",
            levels=(Level.EXACT,),
        ),
        Method(
            "transfer-all-best",
            "all",
            "the paper's pool from every other network (the best record per source workload, "
            "exact class), every candidate timed",
            levels=(Level.EXACT,),
            formerly=("transfer-all",),
        ),
        Method(
            "transfer-all-pool",
            "all",
            f"the recommender's pool ({POOL}), every candidate timed",
            top_n=3,
        ),
        Method("top-0", "all", f"recommender, nothing timed ({POOL})", Budget(top_k=0), 3),
        Method("top-1", "all", "recommender, the best-ranked candidate timed", Budget(top_k=1), 3),
        Method("top-3", "all", "recommender, the 3 best-ranked timed", Budget(top_k=3), 3),
        Method("budget-30s", "all", "recommender, 30 s of timing", Budget(seconds=30.0), 3),
        Method("budget-120s", "all", "recommender, 120 s of timing", Budget(seconds=120.0), 3),
    )
}
RENAMED = {old: m.name for m in METHODS.values() for old in m.formerly}


def current_name(name: str) -> str:
    """The method's name now, for a name found in earlier state."""
    return RENAMED.get(name, name)


# --quick: about 20 minutes on 2 cores (a ResNet-18 build costs ~40 s, its searches ~7 min)
QUICK_METHODS = ("transfer-paper", "top-0", "top-3")
QUICK_GRID = 5
QUICK_NETWORKS = ("resnet18", "alexnet")
