"""MetaSchedule as a baseline, rebuilt from a timestamped tuning log.

``timestamps.jsonl`` tells when each record was measured, so the database MetaSchedule had
after any amount of tuning time can be rebuilt: all records stamped up to that time. Compiling
and timing those databases gives MetaSchedule's best-so-far curve, its latency at equal wall
time, and its time to match another method.
"""

from __future__ import annotations

import numpy as np
import tvm

from ..core.errors import InputError
from ..logs.history import best_at, bisect_stops, database_at, timed_records
from ..logs.tuning_log import TuningLog
from ..networks.network import Network
from . import endtoend


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
