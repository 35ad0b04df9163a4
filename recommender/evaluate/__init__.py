"""Whole networks: end-to-end builds and timings, the MetaSchedule baseline, the evaluation."""
