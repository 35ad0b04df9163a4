"""The recommender: rank candidates, spend a budget, choose per kernel, warm-start MetaSchedule."""
