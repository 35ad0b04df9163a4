"""MetaSchedule as a baseline, rebuilt from a timestamped tuning log.

``timestamps.jsonl`` tells when each record was measured, so the database MetaSchedule had
after any amount of tuning time can be rebuilt: all records stamped up to that time. Compiling
and timing those databases gives MetaSchedule's best-so-far curve, its latency at equal wall
time, and its time to match another method.
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
import tvm
from tvm.s_tir import meta_schedule as ms

from . import endtoend
from .errors import InputError
from .network import Network
from .tuning_log import FAILED_RUN_S, TuningLog


@dataclass(frozen=True)
class TimedRecord:
    """One record of a log with its stamp: when it was measured and on which workload."""

    elapsed_s: float
    workload: int
    run_s: float
    record: ms.database.TuningRecord


def timed_records(log: TuningLog) -> tuple[list[TimedRecord], list[ms.database.Workload]]:
    """Every valid record in file order, paired with its stamp (read through TVM's parsers)."""
    workloads = [
        ms.database.Workload.from_json(json.loads(line))
        for line in log.workloads_path.read_text().splitlines()
        if line.strip()
    ]
    stamps = log.stamps()
    lines = [line for line in log.records_path.read_text().splitlines() if line.strip()]
    timed = []
    for stamp, line in zip(stamps, lines):
        index, record_json = json.loads(line)
        record = ms.database.TuningRecord.from_json(record_json, workloads[index])
        secs = sorted(float(s) for s in record.run_secs)
        run_s = secs[len(secs) // 2] if secs else math.inf
        if run_s < FAILED_RUN_S:
            timed.append(TimedRecord(stamp.elapsed_s, index, run_s, record))
    return timed, workloads


def best_at(timed: list[TimedRecord], until_s: float) -> dict[int, TimedRecord]:
    """The best record per workload among those stamped up to ``until_s``."""
    best: dict[int, TimedRecord] = {}
    for item in timed:
        if item.elapsed_s <= until_s and (
            item.workload not in best or item.run_s < best[item.workload].run_s
        ):
            best[item.workload] = item
    return best


def database_at(timed: list[TimedRecord], until_s: float) -> ms.database.MemoryDatabase:
    """What MetaSchedule's database held after ``until_s`` seconds of tuning (best per workload)."""
    database = ms.database.MemoryDatabase()
    for item in best_at(timed, until_s).values():
        database.commit_workload(item.record.workload.mod)
        database.commit_tuning_record(item.record)
    return database


def kernel_curve(timed: list[TimedRecord], weights: dict[int, int]) -> list[tuple[float, float]]:
    """Sum over workloads of weight x best kernel time, after each batch: never increases once
    every workload has a record (the best-so-far curve at kernel level, no compile needed)."""
    best: dict[int, float] = {}
    curve = []
    for elapsed in sorted({t.elapsed_s for t in timed}):
        for t in timed:
            if t.elapsed_s == elapsed:
                best[t.workload] = min(best.get(t.workload, math.inf), t.run_s)
        curve.append((elapsed, sum(weights.get(w, 1) * s for w, s in best.items())))
    return curve


def bisect_stops(stops: list[float]) -> Generator[float, bool, float | None]:
    """The first of ``stops`` at which MetaSchedule's build is at least as fast as a method's.

    A generator: it yields each stop to probe and is sent whether MetaSchedule matched there,
    so the caller can probe several methods' stops together. Bisection (best-so-far latency
    is close to monotone): about log2(stops) probes. Returns None if the last stop does not
    match.
    """
    if not stops or not (yield stops[-1]):
        return None
    low, high = 0, len(stops) - 1
    while low < high:
        mid = (low + high) // 2
        if (yield stops[mid]):
            high = mid
        else:
            low = mid + 1
    return stops[low]


class MetaScheduleBuilds:
    """Builds of a network with what MetaSchedule's log held after given tuning times.

    Builds are memoised by the set of best records they include, so the curve, the equal-time
    points and every method's time-to-match bisection share them; builds wanted together are
    compiled side by side (``endtoend.Builds``).
    """

    def __init__(
        self,
        network: Network,
        prepared: tvm.IRModule,
        target,
        log: TuningLog,
        builds: endtoend.Builds | None = None,
    ):
        self.network = network
        self.builds = builds or endtoend.Builds(prepared, target)
        self.timed, _ = timed_records(log)
        if not self.timed:
            raise InputError("the tuning log holds no valid record", path=log.path)
        self.stops = sorted({t.elapsed_s for t in self.timed})
        self._keys: dict[float, tuple] = {}

    @property
    def tuning_s(self) -> float:
        return self.stops[-1]

    def want(self, stamps: list[float]) -> None:
        """Ask for the builds after each of ``stamps`` seconds (made at the next ``at``)."""
        for elapsed_s in stamps:
            key = self._key(elapsed_s)
            if key not in self.builds:
                self.builds.want(key, database_at(self.timed, elapsed_s))

    def at(self, elapsed_s: float):
        """MetaSchedule's build after ``elapsed_s`` seconds (untuned before its first batch),
        with every other wanted build compiled beside it."""
        self.want([elapsed_s])
        return self.builds.get(self._key(elapsed_s))

    def _key(self, elapsed_s: float) -> tuple:
        """The build's identity: the records it includes (stamps in one batch share it)."""
        if elapsed_s not in self._keys:
            chosen = best_at(self.timed, elapsed_s).values()
            self._keys[elapsed_s] = ("metaschedule", tuple(sorted(id(item) for item in chosen)))
        return self._keys[elapsed_s]

    def grid(self, points: int) -> list[float]:
        """About ``points`` batch stamps spread geometrically over the log, the last included."""
        first, last = self.stops[0], self.stops[-1]
        wanted = np.geomspace(max(first, 1.0), max(last, 1.0), points)
        return sorted({min(self.stops, key=lambda s: abs(s - w)) for w in wanted} | {last})

    def times_to_match(
        self, methods: dict[str, tuple[object, float, float | None]]
    ) -> dict[str, float | None]:
        """Per method (name: (build, after_s, before_s)), MetaSchedule's first stamp in
        (``after_s``, ``before_s``] whose build runs at least as fast as the method's; None if
        none does. The bisections advance together: each round's probes are built side by
        side, then each is timed interleaved with its method."""
        searches, found = {}, {}
        for name, (_, after_s, before_s) in methods.items():
            before_s = self.tuning_s if before_s is None else before_s
            searches[name] = bisect_stops([s for s in self.stops if after_s < s <= before_s])
        answers: dict[str, bool | None] = dict.fromkeys(searches)  # None starts a search
        while answers:
            probes = {}
            for name, answer in answers.items():
                try:
                    probes[name] = searches[name].send(answer)
                except StopIteration as done:
                    found[name] = done.value
            self.want(list(probes.values()))
            answers = {}
            for name, stamp in probes.items():
                pair = {"metaschedule": self.at(stamp), "method": methods[name][0]}
                times = endtoend.time_interleaved(pair, self.network)
                answers[name] = times["metaschedule"] <= times["method"]
        return found


def full_database(log: TuningLog, target: tvm.target.Target) -> ms.database.Database:
    """The whole log: MetaSchedule's result at the end of its budget."""
    return TuningLog.open(log.path, target=target).database()
