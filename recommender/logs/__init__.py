"""Tuning logs: MetaSchedule collection, provenance and stamps, source schedules, tuning history."""
