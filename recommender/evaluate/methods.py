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
    recommender within ``budget``."""

    name: str
    sources: str  # "paper" (the paper's fixed source network) or "all" (every other one)
    budget: Budget | None = None
    top_n: int = 1  # records per source workload
    levels: tuple[Level, ...] = LEVELS  # exact only: the paper's algorithm as published

    def to_json(self) -> dict:
        budget = self.budget.to_json() if self.budget else "every candidate"
        return {
            "name": self.name,
            "sources": self.sources,
            "budget": budget,
            "top_n": self.top_n,
            "levels": [level.value for level in self.levels],
        }


METHODS = {
    m.name: m
    for m in (
        Method("transfer-paper", "paper", levels=(Level.EXACT,)),
        Method("transfer-all", "all"),
        Method("top-0", "all", Budget(top_k=0), 3),
        Method("top-1", "all", Budget(top_k=1), 3),
        Method("top-3", "all", Budget(top_k=3), 3),
        Method("budget-30s", "all", Budget(seconds=30.0), 3),
        Method("budget-120s", "all", Budget(seconds=120.0), 3),
    )
}


# --quick: about 20 minutes on 2 cores (a ResNet-18 build costs ~40 s, its searches ~7 min)
QUICK_METHODS = ("transfer-paper", "top-0", "top-3")
QUICK_GRID = 5
QUICK_NETWORKS = ("resnet18", "alexnet")
